"""The text report of any run, rendered from its events alone.

The live run and `swarmflow report RUN_DIR` print the same text: both fold the event stream
into a `Digest` (and the report's other analyses) and render that, so nothing in the report
can come from anywhere but the log. The events are folded one at a time, in one pass: the
report of a log read from disk holds what its sections show, never the events.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from swarmflow.record.events import EventBase
from swarmflow.report._format import as_json, clip, share, table
from swarmflow.report.adherence import AdherenceFold
from swarmflow.report.candidates import BranchOutcomes, candidates_of, render_candidates
from swarmflow.report.digest import (
    Digest,
    HumanExchange,
    Resume,
    Spend,
    branch_index,
)
from swarmflow.report.evidence import EvidenceFold
from swarmflow.report.log import LogStream, RunLog, read_log
from swarmflow.report.team import MessageMatrix, TokenShares, render_matrix, render_shares
from swarmflow.report.timeline import TimelineHead

DEMO_MODEL = "demo-scripted"
"""The model name of the scripted demo policy (see `swarmflow.flows.demo`)."""
MAX_TIMELINE = 60
"""Timeline lines shown in text; the HTML report shows every entry."""
MAX_SESSIONS = 40
"""Per-session rows shown; beyond that the per-agent totals say it all."""
_TIMELINE_KINDS = frozenset(
    {"model", "tool", "wait", "message", "human", "refusal", "session", "resume"}
)
_STATUS_WHY = {
    "ok": "the flow returned its output",
    "failed": "the run failed",
    "cancelled": "the run was cancelled from outside",
    "paused": "the run is waiting for a person's answer; resume it with that answer",
}


class ReportFolds:
    """Every analysis the text report shows, fed one event at a time. What it holds grows with
    the run's sessions, agents and findings (and 20 bytes a model call for the token shares),
    not with its events."""

    def __init__(self) -> None:
        self.digest = Digest()
        self.branches = BranchOutcomes()
        self.shares = TokenShares()
        self.matrix = MessageMatrix()
        self.timeline = TimelineHead(MAX_TIMELINE, _TIMELINE_KINDS)
        self.adherence = AdherenceFold()
        self.evidence = EvidenceFold()

    def add(self, e: EventBase) -> None:
        self.digest.add(e)
        self.branches.add(e)
        self.shares.add(e)
        self.matrix.add_event(e)
        self.timeline.add(e)
        self.adherence.add(e)
        self.evidence.add(e)

    def render(self, run_dir: Path | str | None = None, *, note: str = "") -> str:
        """The report's text."""
        d = self.digest
        parts = [
            _header(d),
            _status(d),
            _output(d),
            render_candidates(d, candidates_of(d, self.branches)),
            _humans(d.humans),
            _usage(d),
            _resumes(d.resumes, d.total()),
            _prefix(d),
            render_shares(self.shares.shares()),
            render_matrix(self.matrix),
            _timeline(self.timeline),
            _listed("Dropped by compact", d.dropped),
            _listed("Refusals", d.refusals),
            _listed("Retries", d.retries),
            self.evidence.render(),
            _organization(self.adherence),
            _footer(d, run_dir, note),
        ]
        return "\n\n".join(p for p in parts if p) + "\n"


def fold_report(events: Iterable[EventBase]) -> ReportFolds:
    """The report's analyses of `events`, read once, in one pass."""
    folds = ReportFolds()
    for event in events:
        folds.add(event)
    return folds


def render_report(
    events: Iterable[EventBase], run_dir: Path | str | None = None, *, note: str = ""
) -> str:
    """The report of a run, from its events (and where its directory is)."""
    return fold_report(events).render(run_dir, note=note)


def report_from_dir(run_dir: Path | str) -> str:
    """The same report as the live run printed, read back from `RUN_DIR/events.jsonl` in one
    pass (the events are folded as they are read, never all held).

    Raises `LogError` (one line) when there is no readable log there.
    """
    return report_of(read_log(run_dir), run_dir)


def report_of(log: RunLog | LogStream, run_dir: Path | str) -> str:
    """The report of a log, folded as its events are read, saying what a truncated log left
    out. A `LogStream` is read through (it can be read once); a `RunLog` is read again."""
    stream = log.stream() if isinstance(log, RunLog) else log
    folds = fold_report(stream)
    return folds.render(run_dir, note=stream.note())


def model_label(models: Iterable[str]) -> str:
    """The models used, with the scripted demo policy called out as such."""
    names = sorted({m for m in models if m})
    shown = [f"{m} (scripted policy, no LLM)" if _scripted(m) else m for m in names]
    return ", ".join(shown) or "none called"


def _scripted(model: str) -> bool:
    """The demo's policy, or another scripted stand-in named `...-scripted` (an example's)."""
    return model == DEMO_MODEL or model.endswith("-scripted")


def _header(d: Digest) -> str:
    """The title, the models (scripted or real) and the inputs."""
    title = f"swarmflow · {d.flow or 'run'} · {d.run_id or '?'} · {d.status}"
    lines = [title, "─" * len(title)]
    lines.append(f"model    {model_label(s.model for s in d.sessions.values())}")
    for key, value in d.inputs.items():
        lines.append(f"{key:<8} {clip(as_json(value), 70)}")
    return "\n".join(lines)


def _status(d: Digest) -> str:
    """The status and why: the error, and the sessions that did not end well."""
    if d.status == "unfinished":
        why = (
            f"the log ends at {d.last_t:.2f}s without run_finished: the run was killed, "
            "or is still going"
        )
    else:
        why = _STATUS_WHY.get(d.status, d.status)
    lines = [f"status   {d.status}: {why}"]
    if d.error:
        lines.append(f"error    {clip(d.error, 200)}")
    for s in d.sessions.values():
        if s.state in ("error", "stopped") and s.reason != "cancelled":
            detail = f": {clip(s.detail, 100)}" if s.detail else ""
            lines.append(f"         {s.label} ({s.id}) {s.state}, {s.reason}{detail}")
    return "\n".join(lines)


def _output(d: Digest) -> str:
    """What the flow returned, when it ended ok."""
    if not d.has_output:
        return ""
    return f"output   {clip(as_json(d.output), 300)}"


def _humans(humans: list[HumanExchange]) -> str:
    """Each question put to a person, and who answered what."""
    if not humans:
        return "human    not asked"
    lines = []
    for h in humans:
        if not h.answered_by:
            answer = "no answer yet"
        else:
            late = ", timed out" if h.timed_out else ""
            answer = f"{h.answered_by} answered {clip(as_json(h.answer), 60)}{late}"
        lines.append(f"human    asked {clip(h.question, 60)!r}; {answer}")
    return "\n".join(lines)


def _usage(d: Digest) -> str:
    """Calls, tokens, cache and cost per agent, then per session when there are few."""
    rows: list[tuple[str, ...]] = [
        (
            "agent",
            "calls",
            "tokens in",
            "tokens out",
            "cached",
            "prefix reuse",
            "across sessions",
            "cost",
        )
    ]
    for agent, spend in [*d.by_agent().items(), ("total", d.total())]:
        cached = f"{spend.tokens_cached:,}" if spend.tokens_cached else "-"
        rows.append(
            (
                agent,
                str(spend.calls),
                f"{spend.tokens_in:,}",
                f"{spend.tokens_out:,}",
                cached,
                share(spend.prefix_share),
                share(spend.cross_share),
                f"${spend.cost:.4f}",
            )
        )
    text = "Tokens and cost\n" + table(rows, right=(1, 2, 3, 4, 5, 6, 7))
    sessions = sorted(d.sessions.values(), key=lambda s: _session_order(d, s.agent, s.branch, s.id))
    if 1 < len(sessions) <= MAX_SESSIONS:
        per: list[tuple[str, ...]] = [
            ("session", "agent", "calls", "tokens in", "tokens out", "cost", "ended")
        ]
        per += [
            (
                s.id,
                s.label,
                str(s.spend.calls),
                f"{s.spend.tokens_in:,}",
                f"{s.spend.tokens_out:,}",
                f"${s.spend.cost:.4f}",
                s.reason or "open",
            )
            for s in sessions
        ]
        text += "\n\n" + table(per, right=(2, 3, 4, 5))
    return text


def _resumes(resumes: list[Resume], total: Spend) -> str:
    """Each resume: what its process replayed and paid, against the whole run's spend."""
    if not resumes:
        return ""
    lines = [f"Resumed {len(resumes)} time{'s' if len(resumes) > 1 else ''}"]
    for r in resumes:
        lines.append(
            f"  at {r.t:.2f}s: {r.replayed} of {r.recorded} recorded calls replayed (no tokens); "
            f"then {r.spend.calls} new calls, {r.spend.tokens_in + r.spend.tokens_out:,} tokens, "
            f"${r.spend.cost:.4f}"
        )
    lines.append(
        f"  the run as a whole: {total.calls} calls, "
        f"{total.tokens_in + total.tokens_out:,} tokens, ${total.cost:.4f} (the table above)"
    )
    return "\n".join(lines)


def _session_order(d: Digest, agent: str, branch: str, session: str) -> tuple[int, int, str]:
    order = {name: i for i, name in enumerate(d.agents)}
    return order.get(agent, len(order)), branch_index(branch) or 0, session


def _bust_warning(busts: list[str]) -> str:
    """One warning per cause of cache busts: the first, and how many calls it cost."""
    more = f" (and {len(busts) - 1} more like it)" if len(busts) > 1 else ""
    return f"WARNING  cache bust: {busts[0]}{more}"


def _prefix(d: Digest) -> str:
    """Where the prompt prefix broke, and the compactions that were allowed to break it."""
    lines = [f"compacted {c}" for c in d.compactions]
    lines += [f"BROKEN   {b}" for b in d.prefix_breaks]
    lines += [_bust_warning(busts) for busts in d.cache_busts.values()]
    if not lines:
        return ""
    return "Prompt prefix\n" + "\n".join(f"  {line}" for line in lines)


def _timeline(head: TimelineHead) -> str:
    """The session-level entries in time order, the first `MAX_TIMELINE` of them."""
    if not head.entries:
        return ""
    lines = ["Timeline"]
    width = max(len(e.lane) for e in head.entries)
    # Recorded as each ends; shown as each started (a long call started before a short tool).
    for e in sorted(head.entries, key=lambda e: (e.start, e.seq)):
        took = f" ({e.duration:.2f}s)" if e.duration >= 0.005 else ""
        lines.append(f"  {e.start:7.2f}s  {e.lane:<{width}}  {clip(e.text, 80)}{took}")
    if head.count > len(head.entries):
        more = head.count - len(head.entries)
        lines.append(f"  ... {more} more (swarmflow report --html shows all)")
    return "\n".join(lines)


def _listed(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"{title}\n" + "\n".join(f"  {clip(item, 160)}" for item in items)


def _organization(fold: AdherenceFold) -> str:
    """Whether the declared team and edges were really followed (the adherence axes)."""
    try:
        return fold.result().render()
    except ValueError:  # a log cut off before run_started has nothing to measure against
        return ""


def _footer(d: Digest, run_dir: Path | str | None, note: str) -> str:
    """Wall time, the run directory, and what a truncated log left out."""
    lines = [f"wall     {d.seconds:.2f}s"]
    if run_dir is not None:
        lines.append(f"run dir  {run_dir}  (events.jsonl)")
    if note:
        lines.append(note)
    return "\n".join(lines)
