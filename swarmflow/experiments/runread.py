"""One run of an experiment, read back from its run directory through `swarmflow.report`.

The events are read once, as a stream, and folded by the report's own folds: the `Digest`
(status, spend per agent, sessions and their end reasons), the `AdherenceFold` (the six axes,
the same computation `swarmflow report` prints) and `TokenShares` (each agent's share of the
tokens per tenth of the run). What the report does not fold, the time each agent spent in its
model calls and its tool calls, is folded here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from swarmflow.core.states import BUDGET_REASONS, EndReason
from swarmflow.experiments.realized import EVIDENCE_FACTORS, FactorFold
from swarmflow.record.events import EventBase, ModelCalled, RunStarted, TeamEnded, ToolExecuted
from swarmflow.report.adherence import Adherence, AdherenceFold
from swarmflow.report.digest import Digest
from swarmflow.report.log import LogError, read_log
from swarmflow.report.team import TokenShares

AXES = (
    "participation",
    "delegation",
    "role boundary",
    "budget sharing",
    "information flow",
    "context policy",
)
ORGANIZATION_AXES = frozenset({"participation", "delegation"})
"""The axes a run cut short may not have had the time to show (OpenCollab's unverified)."""
END_REASONS = ("completed", "token budget", "step limit", "loop block", "wall clock", "failed")
_ENDED_BY_A_LIMIT: dict[str, str] = {
    EndReason.STEP_LIMIT: "step limit",
    EndReason.LOOP_BLOCK: "loop block",
}
"""A run that ended ok, its lead stopped by one of its own limits (a `StrEnum` is its text)."""


@dataclass(frozen=True, slots=True)
class AssignedAxes:
    """What an arm was assigned, as the reading of a run needs it."""

    delegation: str = "none"
    tools: dict[str, list[str]] | None = None
    context: list[str] | None = None
    factors: dict[str, object] | None = None
    """The factors the arm set, as recorded (`swarmflow.experiments.factors`)."""

    def applies(self, axis: str) -> bool:
        return axis != "delegation" or self.delegation != "none"


WAITING_TOOLS = frozenset({"message_agent", "wait_for_mention"})
"""Tools whose duration is a wait on a teammate, not the agent's own work."""


@dataclass
class Timing:
    """Seconds each agent spent in its model calls and in its own tool calls (a wait on a
    teammate's answer is the teammate's time, not the asker's)."""

    model: dict[str, float] = field(default_factory=dict)
    tool: dict[str, float] = field(default_factory=dict)

    def add(self, e: EventBase) -> None:
        if isinstance(e, ModelCalled) and e.agent:
            self.model[e.agent] = self.model.get(e.agent, 0.0) + max(0.0, e.latency)
        elif isinstance(e, ToolExecuted) and e.agent and e.tool not in WAITING_TOOLS:
            self.tool[e.agent] = self.tool.get(e.agent, 0.0) + max(0.0, e.duration)


@dataclass
class OutputModes:
    """The forms the run's model calls asked of their servers (`output_mode`), e.g. "json_schema"
    or, after a step-down, "json_object": which protocol the run was measured on."""

    seen: set[str] = field(default_factory=set)

    def add(self, e: EventBase) -> None:
        if isinstance(e, ModelCalled) and e.output_mode:
            self.seen.add(e.output_mode)

    def text(self) -> str:
        """The forms, sorted and joined with "+" ("" when no call asked for one)."""
        return "+".join(sorted(self.seen))


@dataclass(frozen=True)
class RunFacts:
    """Everything the experiment's report takes from one run's log."""

    digest: Digest
    adherence: Adherence
    applied: tuple[str, ...]
    timing: Timing
    shares: dict[str, list[float]]
    allowance: int | None
    """Every agent's allowance summed, or the run's token limit (None: unlimited)."""
    seconds_limit: float | None
    lead: str
    note: str = ""
    """What a truncated log left out ('' for a whole log)."""
    output_modes: str = ""
    """The forms its model calls asked of their servers, joined with "+" (`OutputModes`)."""
    factors: dict[str, bool] = field(default_factory=dict)
    """Factor -> whether the run shows it (`swarmflow.experiments.realized`)."""

    @property
    def adherent(self) -> bool:
        held = all(self.adherence.axis(a).ok for a in self.applied)
        return held and all(self.factors.values())

    def axis_ok(self, axis: str) -> bool | None:
        """Whether the axis held; None when the arm was not assigned it."""
        return self.adherence.axis(axis).ok if axis in self.applied else None

    @property
    def end_reason(self) -> str:
        """How the run ended, in the seeds' categories (Figure 5). A run where a role's
        session ended in `error` failed, whatever its flow made of that: the same under
        every controller (a Team's lead that crashed, a Workflow's coder, a single agent)."""
        reasons = {s.reason for s in self.digest.sessions.values()}
        lead = self._lead_reason()
        if EndReason.WALL_CLOCK in reasons or lead == EndReason.WALL_CLOCK:
            return "wall clock"
        if lead in BUDGET_REASONS:
            return "token budget"
        if self.digest.status != "ok" or self.adherence.faulted:
            return "failed"
        return _ENDED_BY_A_LIMIT.get(lead, "completed")

    @property
    def unverified(self) -> bool:
        """Not adherent only on the axes of the organization itself, in a run that was cut
        short (by a limit or a failure) before it could show them."""
        if self.adherent:
            return False
        failing = {a for a in self.applied if not self.adherence.axis(a).ok}
        unshown = {f for f, ok in self.factors.items() if not ok}
        cut = self.end_reason != "completed"
        return failing <= ORGANIZATION_AXES and unshown <= EVIDENCE_FACTORS and cut

    @property
    def engine_seconds(self) -> float:
        """The run's wall clock less every agent's model and tool time (never below 0)."""
        spent = sum(self.timing.model.values()) + sum(self.timing.tool.values())
        return max(0.0, self.digest.seconds - spent)

    def _lead_reason(self) -> str:
        ended = [s for s in self.digest.sessions.values() if s.agent == self.lead and s.reason]
        ended.sort(key=lambda s: s.end or 0.0)
        return ended[-1].reason if ended else ""


def read_run(run_dir: Path, assigned: AssignedAxes) -> RunFacts:
    """Fold the run's log in one pass; `LogError` (one line) when there is none."""
    stream = read_log(run_dir).stream()
    digest, fold = Digest(), AdherenceFold(assigned.context)
    timing, shares, modes = Timing(), TokenShares(), OutputModes()
    factors = FactorFold(assigned.factors or {})
    start: RunStarted | None = None
    lead = ""
    for read in stream:
        event = read
        if isinstance(read, RunStarted) and start is None:
            start = read
            event = _with_assigned_tools(read, assigned.tools)
        elif isinstance(read, TeamEnded) and read.agent:
            lead = read.agent
        digest.add(event)
        fold.add(event)
        timing.add(event)
        shares.add(event)
        modes.add(event)
        factors.add(read)
    if start is None:
        raise LogError(f"{run_dir}: the log has no run_started event")
    applied = tuple(a for a in AXES if assigned.applies(a))
    return RunFacts(
        digest,
        fold.result(),
        applied,
        timing,
        shares.shares(),
        _allowance(start),
        _seconds(start),
        lead or _entry(start),
        stream.note(),
        modes.text(),
        factors.result(),
    )


def _with_assigned_tools(start: RunStarted, tools: dict[str, list[str]] | None) -> RunStarted:
    """The run's start with each agent's assigned tool set in place of its declared one: the
    role boundary axis then judges the calls against the assignment."""
    if not tools:
        return start
    roles: dict[str, dict[str, object]] = {
        name: {**role, "tools": list(tools.get(name, role.get("tools", ())))}
        for name, role in start.roles.items()
    }
    return start.model_copy(update={"roles": roles})


def _entry(start: RunStarted) -> str:
    return start.agents[0] if start.agents else ""


def _allowance(start: RunStarted) -> int | None:
    allowances = [r.get("allowance") for r in start.roles.values()]
    if allowances and all(isinstance(a, int) and a > 0 for a in allowances):
        return sum(int(a) for a in allowances if a is not None)
    limit = start.limits.get("tokens")
    return int(limit) if isinstance(limit, int | float) and limit > 0 else None


def _seconds(start: RunStarted) -> float | None:
    limit = start.limits.get("seconds")
    return float(limit) if isinstance(limit, int | float) and limit > 0 else None
