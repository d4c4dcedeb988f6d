"""Adherence: was the declared organization really followed? Read from the event log alone.

Six axes (after OpenCollab): participation, delegation, role boundary, budget sharing,
information flow and context policy. Each axis has the value realized in the run and the
deviations found; a run is adherent when no axis deviates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from swarmflow.core.states import BUDGET_REASONS
from swarmflow.record.events import (
    AgentFinished,
    BoardMessagePosted,
    BoardRefused,
    ContextCompacted,
    EventBase,
    HandoffRefused,
    MessageRefused,
    MessageSent,
    ModelCalled,
    RunStarted,
    SessionEnded,
    ToolExecuted,
    ToolRefused,
)


@dataclass(frozen=True)
class Axis:
    """One adherence axis: what happened, and what departed from the declaration."""

    name: str
    realized: object
    deviations: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.deviations


@dataclass(frozen=True)
class Adherence:
    """All six axes for one run."""

    axes: tuple[Axis, ...] = field(default=())
    faulted: tuple[str, ...] = ()
    """The agents whose session ended in `error` (a model error after retries, a crash): a
    fault of the world, so where the run deviates its adherence is unverified, not refuted."""

    @property
    def adherent(self) -> bool:
        return all(axis.ok for axis in self.axes)

    def axis(self, name: str) -> Axis:
        return next(a for a in self.axes if a.name == name)

    def render(self) -> str:
        lines = [f"adherence: {'yes' if self.adherent else 'NO'}"]
        for a in self.axes:
            mark = "ok " if a.ok else "DEV"
            lines.append(f"  [{mark}] {a.name:<17} {_show(a.realized)}")
            lines.extend(f"          - {d}" for d in a.deviations)
        if self.faulted and not self.adherent:
            lines.append(
                f"  unverified: the session of {', '.join(self.faulted)} ended in error (a "
                "fault, not a choice of organization)"
            )
        return "\n".join(lines)


def _show(value: object) -> str:
    """A realized value for people: `a=1, b=2` rather than a dict's repr."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={_show(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(_show(v) for v in value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def adherence(
    events: Iterable[EventBase], *, context_policy: Sequence[str] | None = None
) -> Adherence:
    """Measure the run in `events` against the team declared in its `run_started` event.

    `context_policy` lists the compaction levels the experiment allows (None: any).
    """
    fold = AdherenceFold(context_policy)
    for e in events:
        fold.add(e)
    return fold.result()


def participants(events: Iterable[EventBase]) -> set[str]:
    """The agents that worked, as OpenCollab defines it: spent tokens AND produced at least
    one non-empty model output (a final answer with text, or a tool call). An agent whose only
    replies were empty spent tokens but did no work."""
    fold = AdherenceFold()
    for e in events:
        fold.add(e)
    return fold.participants()


_NEEDS_START = (ToolExecuted, MessageSent, BoardMessagePosted)
"""Events judged against the declared roles and edges, which `run_started` brings."""


class AdherenceFold:
    """What the six axes measure, gathered one event at a time; `result()` at the end.

    A deviation is judged against the team of the first `run_started` event, which opens every
    log; an event recorded before it (none is) waits for it.
    """

    def __init__(self, context_policy: Sequence[str] | None = None) -> None:
        self.context_policy = context_policy
        self.start: RunStarted | None = None
        self._declared: set[tuple[str, str]] = set()
        self._early: list[EventBase] = []
        self.tokens: dict[str, int] = {}
        """Tokens each agent drew over the run."""
        self.first_call: dict[str, int] = {}
        """Each agent's first model call, by its sequence number: who started before whom."""
        self.produced: set[str] = set()
        """Agents with a non-empty model output: a final answer with text, or a tool call."""
        self.tools_refused = 0
        self.outside: list[str] = []
        self.budget_refused: set[str | None] = set()
        self.sent = 0
        self.posted = 0
        self.messages_refused = 0
        self.undeclared_sent: list[str] = []
        self.undeclared_reached: list[str] = []
        self.levels: set[str] = set()
        self.agent_levels: dict[str, set[str]] = {}
        """The context levels that fired, per agent."""
        self.faulted: list[str] = []
        """Agents whose session ended in `error`, in the order they ended."""

    def add(self, e: EventBase) -> None:
        if isinstance(e, RunStarted):
            self._started(e)
        elif isinstance(e, _NEEDS_START):
            self._judged(e)
        elif isinstance(e, ModelCalled) and e.agent:
            self.tokens[e.agent] = self.tokens.get(e.agent, 0) + e.tokens_in + e.tokens_out
            self.first_call.setdefault(e.agent, e.seq)
            if e.tool_calls:
                self.produced.add(e.agent)
        elif isinstance(e, AgentFinished) and e.agent and e.produced_content:
            self.produced.add(e.agent)
        elif isinstance(e, ToolRefused):
            self.tools_refused += 1
        elif isinstance(e, SessionEnded):
            self._ended(e)
        elif isinstance(e, MessageRefused | HandoffRefused | BoardRefused):
            self.messages_refused += 1
        elif isinstance(e, ContextCompacted):
            self.levels.add(e.level)
            self.agent_levels.setdefault(e.agent or "", set()).add(e.level)

    def _ended(self, e: SessionEnded) -> None:
        if e.reason in BUDGET_REASONS:
            self.budget_refused.add(e.agent)
        if e.state == "error" and e.agent and e.agent not in self.faulted:
            self.faulted.append(e.agent)

    def _started(self, e: RunStarted) -> None:
        if self.start is not None:
            return
        self.start = e
        self._declared = {(source, target) for source, target in e.edges}
        early, self._early = self._early, []
        for waiting in early:
            self._judged(waiting)

    def _judged(self, e: EventBase) -> None:
        if self.start is None:
            self._early.append(e)
            return
        roles, declared = self.start.roles, self._declared
        if isinstance(e, ToolExecuted):
            if e.agent in roles and e.tool not in roles[e.agent].get("tools", ()):
                self.outside.append(f"{e.agent} executed {e.tool!r} outside its tool set")
        elif isinstance(e, MessageSent):
            self.sent += 1
            if (e.source, e.target) not in declared:
                self.undeclared_sent.append(_undeclared(e.source, e.target))
        elif isinstance(e, BoardMessagePosted):
            self.posted += 1
            self.undeclared_reached += [
                _undeclared(e.sender, r)
                for r in e.recipients
                if r != e.sender and (e.sender, r) not in declared
            ]

    def participants(self) -> set[str]:
        """The agents that worked: spent tokens and produced an output."""
        return {a for a, tokens in self.tokens.items() if tokens > 0} & self.produced

    def result(self) -> Adherence:
        """The six axes; `ValueError` when no `run_started` event was seen."""
        start = self.start
        if start is None:
            raise ValueError("the event log has no run_started event")
        worked = self.participants()
        return Adherence(
            axes=(
                _participation(start.agents, worked),
                _delegation(start, worked, self.first_call),
                self._role_boundary(),
                _budget_sharing(start.roles, self.tokens, self.budget_refused),
                self._information_flow(),
                _context_policy(self.context_policy, self.levels, self._assigned()),
            ),
            faulted=tuple(self.faulted),
        )

    def _assigned(self) -> dict[str, tuple[set[str], set[str]]]:
        """Per agent whose assigned levels `run_started` records: (assigned, fired)."""
        roles = self.start.roles if self.start is not None else {}
        return {
            agent: (set(roles[agent]["context"]), used)
            for agent, used in self.agent_levels.items()
            if agent in roles and "context" in roles[agent]
        }

    def _role_boundary(self) -> Axis:
        return Axis("role boundary", {"refused attempts": self.tools_refused}, tuple(self.outside))

    def _information_flow(self) -> Axis:
        """`message_agent` messages and board messages (to each participant they reached)."""
        realized = {
            "messages": self.sent,
            "board messages": self.posted,
            "refused": self.messages_refused,
        }
        return Axis("information flow", realized, (*self.undeclared_sent, *self.undeclared_reached))


def _undeclared(source: str, target: str) -> str:
    return f"message {source} -> {target} along an undeclared edge"


def _participation(agents: list[str], worked: set[str]) -> Axis:
    idle = [a for a in agents if a not in worked]
    return Axis(
        "participation",
        {a: a in worked for a in agents},
        tuple(f"declared agent {a!r} did no work" for a in idle),
    )


def _delegation(start: RunStarted, worked: set[str], first_call: dict[str, int]) -> Axis:
    """The teammates work was passed to: each worked, and another agent that worked had an
    edge to it and started first. An edge back to the lead (`coder -> lead`) does not make the
    lead its own delegate: the lead started before the coder that could have handed it work."""
    delegated = sorted(
        target
        for target in worked
        if any(
            source != target
            and source in worked
            and first_call.get(source, 0) < first_call.get(target, 0)
            for source, t in start.edges
            if t == target
        )
    )
    needed = bool(start.edges) and len(start.agents) > 1
    deviation = () if delegated or not needed else ("no teammate along a declared edge worked",)
    return Axis("delegation", delegated, deviation)


def _budget_sharing(
    roles: dict[str, dict[str, Any]], drawn: dict[str, int], refused: set[str | None]
) -> Axis:
    realized, deviations = {}, []
    for agent, role in roles.items():
        allowance = role.get("allowance")
        realized[agent] = f"{drawn.get(agent, 0)}/{allowance if allowance else 'unlimited'}"
        if allowance and drawn.get(agent, 0) >= allowance and agent not in refused:
            deviations.append(f"{agent} reached its allowance and no refusal was recorded")
    return Axis("budget sharing", realized, tuple(deviations))


def _context_policy(
    allowed: Sequence[str] | None,
    levels: set[str],
    assigned: dict[str, tuple[set[str], set[str]]],
) -> Axis:
    """The levels that fired, against the experiment's list when it gives one, else against
    each agent's assigned levels (its context policy, as `run_started` records it)."""
    fired = sorted(levels)
    if allowed is not None:
        bad = [f"compaction level {lvl!r} fired" for lvl in fired if lvl not in allowed]
        return Axis("context policy", fired or ["none"], tuple(bad))
    bad = [
        f"agent {agent!r} fired context level {lvl!r}, not one of its assigned "
        f"{', '.join(sorted(own)) or 'none'}"
        for agent, (own, used) in sorted(assigned.items())
        for lvl in sorted(used - own)
    ]
    return Axis("context policy", fired or ["none"], tuple(bad))
