"""The closing summary of a parallel-coder run, rendered from its events alone.

The live run and `swarmflow report RUN_DIR` print the same text: both fold the event stream
into a `Digest` and render that, so nothing in the summary can come from anywhere but the log.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmflow.adherence import adherence
from swarmflow.core.events import (
    AgentFinished,
    BranchFinished,
    EventBase,
    HandoffRefused,
    HumanAnswered,
    HumanRequested,
    ModelCalled,
    OutcomesCompacted,
    PatchApplied,
    RunFinished,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolExecuted,
    WorkspaceChanged,
)
from swarmflow.sinks import read_events

DEMO_MODEL = "demo-scripted"
"""The model name of the scripted demo policy (see `swarmflow.flows.demo`)."""

_LAST_INDEX = re.compile(r"\[(\d+)\]$")
_EXIT = re.compile(r"^exit code: (-?\d+)", re.MULTILINE)
_PYTEST_TALLY = re.compile(r"\d+ (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_CHOICE = re.compile(r'"choice"\s*:\s*(null|-?\d+)')
_CONFIDENCE = re.compile(r'"confidence"\s*:\s*([0-9.]+)')
_REASON = re.compile(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)')


def branch_index(branch: str) -> int | None:
    """The index of the innermost branch segment: `parallel[2]` gives 2."""
    found = _LAST_INDEX.search(branch)
    return int(found.group(1)) if found else None


def agent_label(agent: str, branch: str) -> str:
    """`coder 2` for a coder on branch `parallel[2]`; the plain name outside any branch."""
    index = branch_index(branch)
    return agent if index is None else f"{agent} {index}"


@dataclass
class SessionDigest:
    """One session, as the log tells it."""

    id: str
    agent: str
    branch: str
    model: str = ""
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    state: str = ""
    reason: str = ""
    detail: str = ""
    preview: str = ""
    shells: list[ToolExecuted] = field(default_factory=list)
    commit: str = ""
    files: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return agent_label(self.agent, self.branch)


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
        shells = self.reviewer.shells if self.reviewer else []
        tests = [s for s in shells if "test" in _command(s)] or shells
        if not tests:
            return "not run", ""
        result = tests[-1].result
        code = _EXIT.search(result)
        passed = code is not None and int(code.group(1)) == 0
        return ("passed" if passed else "failed"), tally_line(result)


@dataclass
class Digest:
    """Everything the summary shows, folded from the events."""

    run_id: str = ""
    flow: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)
    status: str = "unfinished"
    error: str | None = None
    seconds: float = 0.0
    sessions: dict[str, SessionDigest] = field(default_factory=dict)
    candidates: dict[int, CandidateDigest] = field(default_factory=dict)
    human: tuple[str, Any, Any, str] | None = None
    """Question, payload, answer and who answered."""
    applied: PatchApplied | None = None
    refusals: list[str] = field(default_factory=list)
    last_t: float = 0.0

    def candidate(self, index: int) -> CandidateDigest:
        """The candidate record for coder `index`, made on first mention."""
        return self.candidates.setdefault(index, CandidateDigest(index))


def _command(event: ToolExecuted) -> str:
    """The shell command of a `run_shell` event."""
    args = event.arguments
    return str(args.get("command", "")) if isinstance(args, dict) else str(args)


def tally_line(output: str) -> str:
    """The test runner's tally line (`1 failed, 3 passed in 0.4s`), else the last line."""
    lines = [line.strip(" =") for line in output.splitlines() if line.strip(" =")]
    tallies = [line for line in lines if _PYTEST_TALLY.search(line)]
    shown = tallies[-1] if tallies else (lines[-1] if lines else "")
    return shown[:70]


# -- folding the events ---------------------------------------------------------------------


def _on_run_started(d: Digest, e: RunStarted) -> None:
    d.run_id, d.flow, d.inputs, d.agents = e.run_id, e.flow, dict(e.inputs), list(e.agents)


def _on_run_finished(d: Digest, e: RunFinished) -> None:
    d.status, d.error, d.seconds = e.status, e.error, e.seconds


def _on_session_started(d: Digest, e: SessionStarted) -> None:
    s = SessionDigest(e.session or "?", e.agent or "?", e.branch, model=e.model or "")
    d.sessions[s.id] = s
    if s.agent == "coder" and (i := branch_index(e.branch)) is not None:
        d.candidate(i).coder = s
    elif s.agent == "reviewer" and (i := branch_index(e.branch)) is not None:
        d.candidate(i).reviewer = s


def _on_model_called(d: Digest, e: ModelCalled) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.calls += 1
        s.tokens_in += e.tokens_in
        s.tokens_out += e.tokens_out
        s.cost += e.cost


def _on_tool_executed(d: Digest, e: ToolExecuted) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None and e.tool == "run_shell":
        s.shells.append(e)


def _on_agent_finished(d: Digest, e: AgentFinished) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.preview = e.preview


def _on_session_ended(d: Digest, e: SessionEnded) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.state, s.reason, s.detail = e.state, e.reason, e.detail


def _on_workspace_changed(d: Digest, e: WorkspaceChanged) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.commit, s.files = e.commit, list(e.files)


def _on_patch_applied(d: Digest, e: PatchApplied) -> None:
    d.applied = e


def _on_branch_finished(d: Digest, e: BranchFinished) -> None:
    i = branch_index(e.branch)
    if i is not None and e.branch.rsplit("/", 1)[-1].startswith("parallel["):
        d.candidate(i).outcome = e.outcome
        d.candidate(i).error = e.error or ""


def _on_compacted(d: Digest, e: OutcomesCompacted) -> None:
    for drop in e.dropped:
        d.candidate(int(drop.get("index", -1))).dropped = str(drop.get("reason", ""))


def _on_human_requested(d: Digest, e: HumanRequested) -> None:
    d.human = (e.question, e.payload, None, "")


def _on_human_answered(d: Digest, e: HumanAnswered) -> None:
    question, payload = (d.human or ("", None, None, ""))[:2]
    d.human = (question, payload, e.answer, e.answered_by)


def _on_refused(d: Digest, e: HandoffRefused) -> None:
    d.refusals.append(f"{e.source} -> {e.target} via {e.via}: {e.reason}")


_FOLD: dict[type[EventBase], Callable[[Digest, Any], None]] = {
    RunStarted: _on_run_started,
    RunFinished: _on_run_finished,
    SessionStarted: _on_session_started,
    ModelCalled: _on_model_called,
    ToolExecuted: _on_tool_executed,
    AgentFinished: _on_agent_finished,
    SessionEnded: _on_session_ended,
    WorkspaceChanged: _on_workspace_changed,
    PatchApplied: _on_patch_applied,
    BranchFinished: _on_branch_finished,
    OutcomesCompacted: _on_compacted,
    HumanRequested: _on_human_requested,
    HumanAnswered: _on_human_answered,
    HandoffRefused: _on_refused,
}


def digest(events: Iterable[EventBase]) -> Digest:
    """Fold a run's events into what the summary shows."""
    d = Digest()
    for event in events:
        d.last_t = event.t
        fold = _FOLD.get(type(event))
        if fold is not None:
            fold(d, event)
    if d.status == "unfinished":
        d.seconds = d.last_t
    return d


# -- the verdict, as recorded -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerdictSeen:
    """The arbiter's verdict, recovered from the log."""

    choice: int | None
    confidence: float | None
    reason: str


def verdict_of(d: Digest) -> VerdictSeen | None:
    """The verdict from the human request's payload, else from the arbiter's last answer."""
    if d.human is not None and isinstance(d.human[1], dict):
        p = d.human[1]
        choice = p.get("choice")
        return VerdictSeen(
            None if choice is None else int(choice), p.get("confidence"), str(p.get("reason", ""))
        )
    arbiters = [s for s in d.sessions.values() if s.agent == "arbiter" and s.preview]
    return _parse_verdict(arbiters[-1].preview) if arbiters else None


def _parse_verdict(text: str) -> VerdictSeen | None:
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


def chosen_index(d: Digest) -> int | None:
    """The candidate whose commit the output branch points at."""
    if d.applied is None:
        return None
    for index, c in d.candidates.items():
        if c.coder is not None and c.coder.commit in (d.applied.source_commit, d.applied.commit):
            return index
    return None


# -- rendering --------------------------------------------------------------------------------


def render_report(events: Iterable[EventBase], run_dir: Path | str | None = None) -> str:
    """The closing summary of a run, from its events (and where its directory is)."""
    events = list(events)
    d = digest(events)
    parts = [
        _header(d),
        _candidates(d),
        _decision(d),
        _usage(d),
        _organization(events),
        _footer(d, run_dir),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _organization(events: list[EventBase]) -> str:
    """Whether the declared team and edges were really followed (the adherence axes)."""
    try:
        return adherence(events).render()
    except ValueError:  # a log cut off before run_started has nothing to measure against
        return ""


def report_from_dir(run_dir: Path | str) -> str:
    """The same summary as the live run printed, read back from `RUN_DIR/events.jsonl`."""
    return render_report(read_events(Path(run_dir) / "events.jsonl"), run_dir)


def model_label(models: Iterable[str]) -> str:
    """The models used, with the scripted demo policy called out as such."""
    names = sorted({m for m in models if m})
    shown = [f"{m} (scripted policy, no LLM)" if m == DEMO_MODEL else m for m in names]
    return ", ".join(shown) or "none called"


def _header(d: Digest) -> str:
    """The title, the model (scripted or real), the task and the target."""
    title = f"swarmflow · {d.flow or 'run'} · {d.run_id} · {d.status}"
    lines = [
        title,
        "─" * len(title),
        f"model    {model_label(s.model for s in d.sessions.values())}",
    ]
    if "task" in d.inputs:
        lines.append(f"task     {_clip(str(d.inputs['task']), 70)}")
    if "target" in d.inputs:
        lines.append(f"target   {d.inputs['target']}")
    if d.error:
        lines.append(f"error    {_clip(d.error, 200)}")
    return "\n".join(lines)


def _candidates(d: Digest) -> str:
    """One row per coder: outcome, files, the tests its reviewer ran."""
    if not d.candidates:
        return "Candidates\n  (none)"
    chosen = chosen_index(d)
    rows: list[tuple[str, ...]] = [("#", "session", "outcome", "files", "tests", "detail")]
    rows += [_candidate_row(c, c.index == chosen) for _, c in sorted(d.candidates.items())]
    return "Candidates\n" + _table(rows)


def _candidate_row(c: CandidateDigest, chosen: bool) -> tuple[str, ...]:
    """The cells of one candidate's row."""
    files = ", ".join(c.coder.files) if c.coder and c.coder.files else "-"
    tests, summary = c.tests() if c.reviewer else ("-", "")
    note = summary
    if c.dropped:
        note = f"dropped by compact: {_clip(c.dropped, 60)}"
    elif c.outcome == "failed":
        note = _clip(c.error, 60)
    if chosen:
        note = f"{note}  ← chosen"
    coder = c.coder.id if c.coder else "-"
    return (str(c.index), coder, c.outcome or "?", files, tests, note)


def _decision(d: Digest) -> str:
    """The verdict, whether a human was asked, and where the result went."""
    lines = [f"verdict  {_verdict_line(d)}"]
    seen = verdict_of(d)
    if seen is not None and seen.reason:
        lines.append(f"         {_clip(seen.reason, 100)}")
    lines.append(f"human    {_human_line(d)}")
    lines.append(f"result   {_result_line(d)}")
    return "\n".join(lines)


def _verdict_line(d: Digest) -> str:
    """Choice and confidence against the threshold the run was given."""
    seen = verdict_of(d)
    threshold = d.inputs.get("threshold")
    bar = f" (threshold {float(threshold):.2f})" if isinstance(threshold, int | float) else ""
    if seen is None:
        return "none: no candidate reached the arbiter"
    choice = "no candidate acceptable" if seen.choice is None else f"candidate {seen.choice}"
    conf = "?" if seen.confidence is None else f"{seen.confidence:.2f}"
    return f"arbiter chose {choice}, confidence {conf}{bar}"


def _human_line(d: Digest) -> str:
    """Whether `human()` was asked, and who answered what."""
    if d.human is None:
        return "not asked"
    question, _, answer, who = d.human
    if who == "":
        return f"asked, no answer yet: {_clip(question, 60)}"
    return f"asked; {who} answered {answer!r}"


def _result_line(d: Digest) -> str:
    """The output branch and commit, if a patch was applied."""
    if d.applied is None:
        return "nothing applied"
    files = ", ".join(d.applied.files) or "no files"
    chosen = chosen_index(d)
    which = "the chosen patch" if chosen is None else f"candidate {chosen}"
    return (
        f"{which} applied to branch {d.applied.git_branch}\n"
        f"         commit {d.applied.commit[:10]}: {files}"
    )


def _usage(d: Digest) -> str:
    """Calls, tokens and cost per agent session, with a total."""
    order = {name: i for i, name in enumerate(d.agents)}
    sessions = sorted(
        d.sessions.values(),
        key=lambda s: (order.get(s.agent, 99), branch_index(s.branch) or 0, s.id),
    )
    rows: list[tuple[str, ...]] = [("agent", "session", "calls", "tokens in", "tokens out", "cost")]
    rows += [
        (s.label, s.id, str(s.calls), f"{s.tokens_in:,}", f"{s.tokens_out:,}", f"${s.cost:.4f}")
        for s in sessions
    ]
    total = (
        sum(s.calls for s in sessions),
        sum(s.tokens_in for s in sessions),
        sum(s.tokens_out for s in sessions),
        sum(s.cost for s in sessions),
    )
    rows.append(("total", "", str(total[0]), f"{total[1]:,}", f"{total[2]:,}", f"${total[3]:.4f}"))
    return "Tokens and cost\n" + _table(rows, right=(2, 3, 4, 5))


def _footer(d: Digest, run_dir: Path | str | None) -> str:
    """Wall time, the run directory and any refused handoffs."""
    lines = [f"wall     {d.seconds:.2f}s"]
    if run_dir is not None:
        lines.append(f"run dir  {run_dir}  (events.jsonl)")
    lines.extend(f"refused  {r}" for r in d.refusals)
    return "\n".join(lines)


def _table(rows: list[tuple[str, ...]], right: tuple[int, ...] = ()) -> str:
    """Rows as aligned columns, indented by two spaces."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return "\n".join(lines)


def _clip(text: str, width: int) -> str:
    """One line of at most `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
