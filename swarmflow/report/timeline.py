"""The run as a timeline: one lane per session (and one for the flow), entries in time order.

Both the text report and the HTML page draw from this list. An entry with a duration (a model
call, a tool, a wait for a teammate or a person) starts `duration` seconds before its event,
which is recorded when it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from swarmflow.record.events import (
    BranchFinished,
    ContextCompacted,
    EventBase,
    HarnessToolExecuted,
    HumanAnswered,
    HumanRequested,
    MessageSent,
    ModelCalled,
    ModelRetried,
    OperatorFinished,
    OperatorStarted,
    OutcomesCompacted,
    PatchApplied,
    RunFinished,
    RunResumed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    SessionTold,
    ToolExecuted,
    WorkspaceChanged,
)
from swarmflow.report.digest import Digest, agent_label, refusal_text

FLOW_LANE = "flow"
WAITING_TOOLS = frozenset({"message_agent", "wait_for_mention"})
"""Tools whose time is spent waiting on someone else."""


@dataclass(frozen=True)
class Entry:
    """One thing that happened, on one lane."""

    seq: int
    start: float
    end: float
    lane: str
    kind: str
    """model, tool, wait, message, human, refusal, compaction, session, operator, run, resume,
    note."""
    text: str
    ok: bool = True

    @property
    def duration(self) -> float:
        return self.end - self.start


def _model(e: ModelCalled) -> tuple[str, str, float]:
    calls = f" -> {', '.join(e.tool_calls)}" if e.tool_calls else ""
    return "model", f"model call {e.step}: {e.tokens_in + e.tokens_out:,} tok{calls}", e.latency


def _tool(e: ToolExecuted) -> tuple[str, str, float]:
    kind = "wait" if e.tool in WAITING_TOOLS else "tool"
    return kind, f"{e.tool}{'' if e.ok else ' (failed)'}", e.duration


def _harness_tool(e: HarnessToolExecuted) -> tuple[str, str, float]:
    return "tool", f"{e.tool} (run by {e.harness})", e.duration


def _session_started(e: SessionStarted) -> tuple[str, str, float]:
    return "session", f"session {e.session} started ({e.model or 'no model'})", 0.0


def _session_ended(e: SessionEnded) -> tuple[str, str, float]:
    detail = f": {e.detail}" if e.detail and e.state != "done" else ""
    return "session", f"session ended {e.state} ({e.reason}){detail}", 0.0


def _message(e: MessageSent) -> tuple[str, str, float]:
    return "message", f"message {e.source} -> {e.target} via {e.via}", 0.0


def _told(e: SessionTold) -> tuple[str, str, float]:
    # Not its text: an entry whose words say "failed" is drawn as a failure.
    return "message", "told a message (no model call)", 0.0


def _human_requested(e: HumanRequested) -> tuple[str, str, float]:
    return "human", f"asked a person ({e.channel}): {e.question}", 0.0


def _human_answered(e: HumanAnswered) -> tuple[str, str, float]:
    late = " (timed out)" if e.timed_out else ""
    return "human", f"{e.answered_by} answered {e.answer!r}{late}", 0.0


def _operator_started(e: OperatorStarted) -> tuple[str, str, float]:
    return "operator", f"{e.operator} started", 0.0


def _operator_finished(e: OperatorFinished) -> tuple[str, str, float]:
    return "operator", f"{e.operator} {e.status}", 0.0


def _branch(e: BranchFinished) -> tuple[str, str, float]:
    why = f": {e.error}" if e.error else ""
    return "operator", f"branch {e.branch} {e.outcome}{why}", 0.0


def _compacted(e: ContextCompacted) -> tuple[str, str, float]:
    return "compaction", f"context compacted ({e.level})", 0.0


def _outcomes(e: OutcomesCompacted) -> tuple[str, str, float]:
    return "operator", f"compact kept {e.kept}, dropped {len(e.dropped)}", 0.0


def _retried(e: ModelRetried) -> tuple[str, str, float]:
    return "refusal", f"model retry {e.attempt}: {e.error}", e.delay


def _workspace(e: WorkspaceChanged) -> tuple[str, str, float]:
    return "note", f"committed {e.commit[:10]} ({', '.join(e.files) or 'no files'})", 0.0


def _applied(e: PatchApplied) -> tuple[str, str, float]:
    return "note", f"patch applied to {e.git_branch} at {e.commit[:10]}", 0.0


def _run_started(e: RunStarted) -> tuple[str, str, float]:
    return "run", f"run {e.run_id} of {e.flow} started", 0.0


def _run_resumed(e: RunResumed) -> tuple[str, str, float]:
    return (
        "resume",
        f"resumed here in a new process: {e.recorded_calls} recorded calls to replay",
        0.0,
    )


def _run_finished(e: RunFinished) -> tuple[str, str, float]:
    return "run", f"run {e.status}" + (f": {e.error}" if e.error else ""), 0.0


_SHOW: dict[type[EventBase], Callable[[Any], tuple[str, str, float]]] = {
    ModelCalled: _model,
    ToolExecuted: _tool,
    HarnessToolExecuted: _harness_tool,
    SessionStarted: _session_started,
    SessionEnded: _session_ended,
    MessageSent: _message,
    SessionTold: _told,
    HumanRequested: _human_requested,
    HumanAnswered: _human_answered,
    OperatorStarted: _operator_started,
    OperatorFinished: _operator_finished,
    BranchFinished: _branch,
    ContextCompacted: _compacted,
    OutcomesCompacted: _outcomes,
    ModelRetried: _retried,
    WorkspaceChanged: _workspace,
    PatchApplied: _applied,
    RunStarted: _run_started,
    RunResumed: _run_resumed,
    RunFinished: _run_finished,
}

_FAILED = ("failed", "error", "stopped", "cancelled")


def lane_of(e: EventBase, labels: dict[str, str]) -> str:
    """The session's lane (`coder 2 · coder#5`), else the flow's."""
    if e.session:
        if e.session not in labels:
            labels[e.session] = f"{agent_label(e.agent or '?', e.branch)} · {e.session}"
        return labels[e.session]
    return FLOW_LANE


class Timeline:
    """Makes the entries one event at a time (each session's lane label kept, nothing else)."""

    def __init__(self) -> None:
        self._labels: dict[str, str] = {}

    def entry(self, e: EventBase) -> Entry | None:
        """The entry of `e`, or None for an event the timeline does not show."""
        show = _SHOW.get(type(e))
        refusal = refusal_text(e) if show is None else ""
        if show is None and not refusal:
            return None
        kind, text, duration = show(e) if show is not None else ("refusal", refusal, 0.0)
        ok = not any(word in text for word in _FAILED) and kind != "refusal"
        start = max(0.0, e.t - duration)
        return Entry(e.seq, start, e.t, lane_of(e, self._labels), kind, text, ok)


def timeline(events: Iterable[EventBase]) -> list[Entry]:
    """The entries of a run, in the order their events were recorded."""
    made = Timeline()
    return [entry for e in events if (entry := made.entry(e)) is not None]


class TimelineHead:
    """The first `limit` entries of the given kinds, and how many there were in all: what
    the text report shows, folded one event at a time without keeping the rest."""

    def __init__(self, limit: int, kinds: frozenset[str]) -> None:
        self.limit, self.kinds = limit, kinds
        self.entries: list[Entry] = []
        self.count = 0
        self._made = Timeline()

    def add(self, e: EventBase) -> None:
        entry = self._made.entry(e)
        if entry is None or entry.kind not in self.kinds:
            return
        self.count += 1
        if len(self.entries) < self.limit:
            self.entries.append(entry)


def lanes(entries: Iterable[Entry]) -> list[str]:
    """The lanes in order of first appearance, the flow's first."""
    seen = {FLOW_LANE: None}
    for entry in entries:
        seen.setdefault(entry.lane, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class Placed:
    """One entry placed on its lane, in percent of the run's span (how a page draws it)."""

    entry: Entry
    left: float
    width: float


def span_of(d: Digest, entries: Iterable[Entry]) -> float:
    """The seconds a drawn timeline spans: the run's, or its last event's or entry's end."""
    return max([d.seconds, d.last_t, *(e.end for e in entries)]) or 1.0


def placed_lanes(
    entries: list[Entry], span: float, narrowest: float
) -> list[tuple[str, list[Placed]]]:
    """Each lane (`lanes`) with its entries placed in percent of `span`, none narrower than
    `narrowest` percent, so that instants stay clickable."""
    placed: dict[str, list[Placed]] = {lane: [] for lane in lanes(entries)}
    for e in entries:
        left = min(100.0 - narrowest, 100.0 * e.start / span)
        width = max(narrowest, min(100.0 - left, 100.0 * e.duration / span))
        placed[e.lane].append(Placed(e, round(left, 3), round(width, 3)))
    return list(placed.items())
