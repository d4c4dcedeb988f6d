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
    realized: Any
    deviations: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.deviations


@dataclass(frozen=True)
class Adherence:
    """All six axes for one run."""

    axes: tuple[Axis, ...] = field(default=())

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
        return "\n".join(lines)


def _show(value: Any) -> str:
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
    events = list(events)
    start = next((e for e in events if isinstance(e, RunStarted)), None)
    if start is None:
        raise ValueError("the event log has no run_started event")
    roles = start.roles
    return Adherence(
        axes=(
            _participation(start.agents, events),
            _delegation(start, events),
            _role_boundary(roles, events),
            _budget_sharing(roles, events),
            _information_flow(start.edges, events),
            _context_policy(context_policy, events),
        )
    )


def _workers(events: list[EventBase]) -> dict[str, int]:
    """Tokens each agent drew over the run."""
    tokens: dict[str, int] = {}
    for e in events:
        if isinstance(e, ModelCalled) and e.agent:
            tokens[e.agent] = tokens.get(e.agent, 0) + e.tokens_in + e.tokens_out
    return tokens


def participants(events: Iterable[EventBase]) -> set[str]:
    """The agents that worked, as OpenCollab defines it: spent tokens AND produced at least
    one non-empty model output (a final answer with text, or a tool call). An agent whose only
    replies were empty spent tokens but did no work."""
    events = list(events)
    spent = {a for a, tokens in _workers(events).items() if tokens > 0}
    produced = {
        e.agent
        for e in events
        if e.agent
        and (
            (isinstance(e, AgentFinished) and e.produced_content)
            or (isinstance(e, ModelCalled) and e.tool_calls)
        )
    }
    return spent & produced


def _participation(agents: list[str], events: list[EventBase]) -> Axis:
    worked = participants(events)
    idle = [a for a in agents if a not in worked]
    return Axis(
        "participation",
        {a: a in worked for a in agents},
        tuple(f"declared agent {a!r} did no work" for a in idle),
    )


def _delegation(start: RunStarted, events: list[EventBase]) -> Axis:
    worked = participants(events)
    targets = {d for _, d in start.edges}
    delegated = sorted(a for a in worked if a in targets)
    needed = bool(start.edges) and len(start.agents) > 1
    deviation = () if delegated or not needed else ("no teammate along a declared edge worked",)
    return Axis("delegation", delegated, deviation)


def _role_boundary(roles: dict[str, dict[str, Any]], events: list[EventBase]) -> Axis:
    outside, refused = [], 0
    for e in events:
        if isinstance(e, ToolRefused):
            refused += 1
        elif (
            isinstance(e, ToolExecuted)
            and e.agent in roles
            and e.tool not in roles[e.agent]["tools"]
        ):
            outside.append(f"{e.agent} executed {e.tool!r} outside its tool set")
    return Axis("role boundary", {"refused attempts": refused}, tuple(outside))


def _budget_sharing(roles: dict[str, dict[str, Any]], events: list[EventBase]) -> Axis:
    drawn = _workers(events)
    refused = {
        e.agent for e in events if isinstance(e, SessionEnded) and e.reason in BUDGET_REASONS
    }
    realized, deviations = {}, []
    for agent, role in roles.items():
        allowance = role.get("allowance")
        realized[agent] = f"{drawn.get(agent, 0)}/{allowance if allowance else 'unlimited'}"
        if allowance and drawn.get(agent, 0) >= allowance and agent not in refused:
            deviations.append(f"{agent} reached its allowance and no refusal was recorded")
    return Axis("budget sharing", realized, tuple(deviations))


def _information_flow(edges: list[tuple[str, str]], events: list[EventBase]) -> Axis:
    """`message_agent` messages and board messages (to each participant they reached)."""
    declared = {tuple(e) for e in edges}
    sent = [(e.source, e.target) for e in events if isinstance(e, MessageSent)]
    posted = [e for e in events if isinstance(e, BoardMessagePosted)]
    reached = [(e.sender, r) for e in posted for r in e.recipients if r != e.sender]
    refused = sum(isinstance(e, MessageRefused | HandoffRefused | BoardRefused) for e in events)
    bad = [
        f"message {s} -> {t} along an undeclared edge"
        for s, t in [*sent, *reached]
        if (s, t) not in declared
    ]
    realized = {"messages": len(sent), "board messages": len(posted), "refused": refused}
    return Axis("information flow", realized, tuple(bad))


def _context_policy(allowed: Sequence[str] | None, events: list[EventBase]) -> Axis:
    fired = [e.level for e in events if isinstance(e, ContextCompacted)]
    bad = []
    if allowed is not None:
        bad = [
            f"compaction level {lvl!r} fired" for lvl in sorted(set(fired)) if lvl not in allowed
        ]
    return Axis("context policy", sorted(set(fired)) or ["none"], tuple(bad))
