"""Block compaction: a session's history is left alone until a request would pass the
policy's high watermark, then the policy's processors run, in registered order, until it is
back under the low watermark. Between two compactions each request extends the one before
it byte for byte, so the provider's prompt cache keeps serving the whole earlier prompt;
redoing the reduction on every call once over budget breaks it on every call.

Each level that changed something is recorded as `context_compacted` with what it removed,
its size before and after, and what its own model calls cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import swarmflow.context.builtin  # noqa: F401  (registers the built-in levels)
from swarmflow.context.history import history_units
from swarmflow.context.registry import PROCESSORS, ProcessorRegistry, Registered
from swarmflow.context.surroundings import Pressure, Surroundings
from swarmflow.core.context_policy import BACKSTOP, DEFAULT_POLICY, ContextPolicy
from swarmflow.core.messages import Message, Usage
from swarmflow.record.events import ContextCompacted


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction's result: the new history and what its levels' model calls used."""

    history: list[Message]
    levels: tuple[str, ...]
    cost: float
    usage: Usage


class ContextWindow:
    """One agent's policy, resolved against the registry once per run."""

    __slots__ = ("_levels", "_backstop", "policy")

    def __init__(
        self,
        policy: ContextPolicy | None,
        *,
        agent: str = "",
        registry: ProcessorRegistry = PROCESSORS,
    ) -> None:
        self.policy = policy or DEFAULT_POLICY
        chosen = [n for n in self.policy.processors if n != BACKSTOP]
        self._levels: list[Registered] = registry.ordered(chosen, agent=agent)
        self._backstop = registry.ordered([BACKSTOP])[0]

    def pressing(self, units: int, room: int) -> bool:
        """Whether a history of `units` must be compacted before it is sent."""
        return units > room * self.policy.high

    async def compact(self, history: list[Message], room: int, around: Surroundings) -> Compacted:
        """`history` reduced level by level to the low watermark; the last resort then
        makes sure it fits `room` whatever the levels could do."""
        pressure = Pressure(room, int(room * self.policy.low), self.policy, around)
        current, fired = history, []
        cost, usage = 0.0, Usage()
        units = history_units(current)
        for level in self._levels:
            if not pressure.over(units):
                break
            current, units, spent = await _apply(level, current, units, pressure)
            if spent is not None:
                fired.append(level.name)
                cost += spent[0]
                usage += spent[1]
        if units > room:
            current, units, spent = await _apply(self._backstop, current, units, pressure)
            if spent is not None:
                fired.append(self._backstop.name)
        return Compacted(current, tuple(fired), cost, usage)


async def _apply(
    level: Registered, history: list[Message], units: int, pressure: Pressure
) -> tuple[list[Message], int, tuple[float, Usage] | None]:
    """Run one level; record it when it changed the history."""
    reduction = await level.run(history, pressure)
    if reduction is None or reduction.history == history:
        return history, units, None
    after = history_units(reduction.history)
    pressure.around.emit(
        ContextCompacted,
        level=level.name,
        messages_before=len(history),
        messages_after=len(reduction.history),
        tokens_before=pressure.tokens(units),
        tokens_after=pressure.tokens(after),
        removed=reduction.removed,
        cost=reduction.cost,
        tokens_spent=reduction.usage.total,
    )
    return reduction.history, after, (reduction.cost, reduction.usage)
