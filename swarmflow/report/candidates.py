"""The flagship's candidates: one coder's patch each, the tests its reviewer ran, the verdict.

This section appears in a report only when the run had candidates: coder sessions on
`parallel[i]` branches (with their reviewers on the matching pipeline branches).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from swarmflow.record.events import BranchFinished, EventBase, OutcomesCompacted
from swarmflow.report._format import clip, table
from swarmflow.report.digest import Digest, SessionDigest, branch_index

_EXIT = re.compile(r"^exit code: (-?\d+)", re.MULTILINE)
_PYTEST_TALLY = re.compile(r"\d+ (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_CHOICE = re.compile(r'"choice"\s*:\s*(null|-?\d+)')
_CONFIDENCE = re.compile(r'"confidence"\s*:\s*([0-9.]+)')
_REASON = re.compile(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)')


@dataclass
class CandidateDigest:
    """One coder's candidate: its outcome and the tests its reviewer ran."""

    index: int
    coder: SessionDigest | None = None
    reviewer: SessionDigest | None = None
    outcome: str = ""
    error: str = ""
    dropped: str = ""

    def tests(self) -> tuple[str, str]:
        """`(passed|failed|not run, summary)` from the reviewer's last test command."""
        shell = (self.reviewer.last_test or self.reviewer.last_shell) if self.reviewer else None
        if shell is None:
            return "not run", ""
        result = shell.result
        code = _EXIT.search(result)
        passed = code is not None and int(code.group(1)) == 0
        return ("passed" if passed else "failed"), tally_line(result)


@dataclass
class Candidates:
    """The candidates of a run, by coder index."""

    by_index: dict[int, CandidateDigest] = field(default_factory=dict)

    def of(self, index: int) -> CandidateDigest:
        """The candidate record for coder `index`, made on first mention."""
        return self.by_index.setdefault(index, CandidateDigest(index))


def tally_line(output: str) -> str:
    """The test runner's tally line (`1 failed, 3 passed in 0.4s`), else the last line."""
    lines = [line.strip(" =") for line in output.splitlines() if line.strip(" =")]
    tallies = [line for line in lines if _PYTEST_TALLY.search(line)]
    shown = tallies[-1] if tallies else (lines[-1] if lines else "")
    return shown[:70]


@dataclass
class BranchOutcomes:
    """What the events say of each `parallel[i]` branch, folded one event at a time: its
    outcome and error, and why `compact` dropped it."""

    outcomes: dict[int, tuple[str, str]] = field(default_factory=dict)
    dropped: dict[int, str] = field(default_factory=dict)

    def add(self, e: EventBase) -> None:
        if isinstance(e, BranchFinished):
            index = branch_index(e.branch)
            if index is not None and e.branch.rsplit("/", 1)[-1].startswith("parallel["):
                self.outcomes[index] = (e.outcome, e.error or "")
        elif isinstance(e, OutcomesCompacted):
            for drop in e.dropped:
                index = _index(drop.get("index", -1))
                if index is not None:
                    self.dropped[index] = str(drop.get("reason", ""))


def _index(value: Any) -> int | None:
    """A dropped outcome's index, or None for one a log forged."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def candidates(d: Digest, events: Iterable[EventBase]) -> Candidates:
    """The run's candidates: coders on parallel branches, their reviewers and outcomes."""
    seen = BranchOutcomes()
    for e in events:
        seen.add(e)
    return candidates_of(d, seen)


def candidates_of(d: Digest, seen: BranchOutcomes) -> Candidates:
    """The candidates of a run folded into `d` and `seen`."""
    found = Candidates()
    for s in d.sessions.values():
        index = branch_index(s.branch)
        if index is not None and s.agent == "coder":
            found.of(index).coder = s
        elif index is not None and s.agent == "reviewer":
            found.of(index).reviewer = s
    if not found.by_index:
        return found
    for index, (outcome, error) in seen.outcomes.items():
        found.of(index).outcome, found.of(index).error = outcome, error
    for index, reason in seen.dropped.items():
        found.of(index).dropped = reason
    return found


# -- the verdict, as recorded -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerdictSeen:
    """The arbiter's verdict, recovered from the log."""

    choice: int | None
    confidence: float | None
    reason: str


def verdict_of(d: Digest) -> VerdictSeen | None:
    """The verdict from the human request's payload, else from the arbiter's last answer."""
    asked = d.humans[-1] if d.humans else None
    if asked is not None and isinstance(asked.payload, dict):
        p = asked.payload
        choice = p.get("choice")
        return VerdictSeen(
            None if choice is None else int(choice), p.get("confidence"), str(p.get("reason", ""))
        )
    arbiters = [s for s in d.sessions.values() if s.agent == "arbiter" and s.preview]
    return parse_verdict(arbiters[-1].preview) if arbiters else None


def parse_verdict(text: str) -> VerdictSeen | None:
    """Pick the fields out of the verdict JSON, which the log may have cut short."""
    choice, confidence = _CHOICE.search(text), _CONFIDENCE.search(text)
    if choice is None and confidence is None:
        return None
    reason = _REASON.search(text)
    return VerdictSeen(
        None if choice is None or choice.group(1) == "null" else int(choice.group(1)),
        float(confidence.group(1)) if confidence else None,
        reason.group(1).replace('\\"', '"') if reason else "",
    )


def chosen_index(d: Digest, found: Candidates) -> int | None:
    """The candidate whose commit the output branch points at."""
    if d.applied is None:
        return None
    for index, c in found.by_index.items():
        if c.coder is not None and c.coder.commit in (d.applied.source_commit, d.applied.commit):
            return index
    return None


# -- the section ------------------------------------------------------------------------------


def render_candidates(d: Digest, found: Candidates) -> str:
    """The candidate table and the decision, or '' when the run had no candidates."""
    if not found.by_index:
        return ""
    chosen = chosen_index(d, found)
    rows: list[tuple[str, ...]] = [("#", "session", "outcome", "files", "tests", "detail")]
    rows += [_row(c, c.index == chosen) for _, c in sorted(found.by_index.items())]
    return "Candidates\n" + table(rows) + "\n\n" + _decision(d, found)


def _row(c: CandidateDigest, chosen: bool) -> tuple[str, ...]:
    """The cells of one candidate's row."""
    files = ", ".join(c.coder.files) if c.coder and c.coder.files else "-"
    tests, summary = c.tests() if c.reviewer else ("-", "")
    note = summary
    if c.dropped:
        note = f"dropped by compact: {clip(c.dropped, 60)}"
    elif c.outcome == "failed":
        note = clip(c.error, 60)
    if chosen:
        note = f"{note}  ← chosen"
    coder = c.coder.id if c.coder else "-"
    return (str(c.index), coder, c.outcome or "?", files, tests, note)


def _decision(d: Digest, found: Candidates) -> str:
    """The verdict and where the result went."""
    seen = verdict_of(d)
    lines = [f"verdict  {_verdict_line(d, seen)}"]
    if seen is not None and seen.reason:
        lines.append(f"         {clip(seen.reason, 100)}")
    lines.append(f"result   {_result_line(d, found)}")
    return "\n".join(lines)


def _verdict_line(d: Digest, seen: VerdictSeen | None) -> str:
    """Choice and confidence against the threshold the run was given."""
    threshold = d.inputs.get("threshold")
    bar = f" (threshold {float(threshold):.2f})" if isinstance(threshold, int | float) else ""
    if seen is None:
        return "none: no candidate reached the arbiter"
    choice = "no candidate acceptable" if seen.choice is None else f"candidate {seen.choice}"
    conf = "?" if seen.confidence is None else f"{seen.confidence:.2f}"
    return f"arbiter chose {choice}, confidence {conf}{bar}"


def _result_line(d: Digest, found: Candidates) -> str:
    """The output branch and commit, if a patch was applied."""
    if d.applied is None:
        return "nothing applied"
    files = ", ".join(d.applied.files) or "no files"
    chosen = chosen_index(d, found)
    which = "the chosen patch" if chosen is None else f"candidate {chosen}"
    return (
        f"{which} applied to branch {d.applied.git_branch}\n"
        f"         commit {d.applied.commit[:10]}: {files}"
    )
