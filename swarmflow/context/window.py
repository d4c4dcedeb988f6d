"""Block compaction: a session's history is left alone until a request would pass the
policy's high watermark, then the policy's processors run, in registered order, on the block
between the history's head and its latest turn until it is back under the low watermark the
block rule chose (`context.blocks`). The head (the task, the oldest turns, earlier notes)
stays byte for byte, so a compaction costs only what it writes after it; between two
compactions each request extends the one before it, so the provider's prompt cache keeps
serving the whole earlier prompt.

Each level that changed something is recorded as `context_compacted` with what it removed,
its size before and after, and what its own model calls cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import swarmflow.context.builtin  # noqa: F401  (registers the built-in levels)
from swarmflow.context.blocks import plan
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
        """`history` reduced to the block rule's low watermark (`context.blocks`): its head
        kept byte for byte and the block after it reduced level by level; when the head
        leaves too little room, the whole history after the task is. The last resort then
        makes sure it fits `room` whatever the levels could do."""
        block = plan(history, room, self.policy)
        if block.keep == 1:
            return await self._reduce(history, 1, room, block.target, around)
        kept = await self._reduce(history, block.keep, room, block.target, around)
        if history_units(kept.history) <= room:
            return kept
        whole = await self._reduce(kept.history, 1, room, block.target, around)
        return Compacted(
            whole.history,
            kept.levels + whole.levels,
            kept.cost + whole.cost,
            kept.usage + whole.usage,
        )

    async def _reduce(
        self, history: list[Message], keep: int, room: int, target: int, around: Surroundings
    ) -> Compacted:
        """The levels run on the task and `history[keep:]`; `history[:keep]` stays as it is."""
        head = history_units(history[1:keep])
        view = [history[0], *history[keep:]]
        pressure = Pressure(room - head, target - head, self.policy, around)
        current, fired = view, []
        cost, usage = 0.0, Usage()
        units = history_units(current)
        at = (keep - 1, head)
        for level in self._levels:
            if not pressure.over(units):
                break
            current, units, spent = await _apply(level, current, units, pressure, at)
            if spent is not None:
                fired.append(level.name)
                cost += spent[0]
                usage += spent[1]
        if units > pressure.room:
            current, units, spent = await _apply(self._backstop, current, units, pressure, at)
            if spent is not None:
                fired.append(self._backstop.name)
        return Compacted([*history[:keep], *current[1:]], tuple(fired), cost, usage)


async def _apply(
    level: Registered,
    history: list[Message],
    units: int,
    pressure: Pressure,
    at: tuple[int, int] = (0, 0),
) -> tuple[list[Message], int, tuple[float, Usage] | None]:
    """Run one level; record it when it changed the history. `at`: the messages and units
    of the head kept before the part the level saw, counted in what is recorded."""
    reduction = await level.run(history, pressure)
    if reduction is None or reduction.history == history:
        return history, units, None
    after = history_units(reduction.history)
    pressure.around.emit(
        ContextCompacted,
        level=level.name,
        messages_before=at[0] + len(history),
        messages_after=at[0] + len(reduction.history),
        tokens_before=pressure.tokens(at[1] + units),
        tokens_after=pressure.tokens(at[1] + after),
        removed=reduction.removed,
        cost=reduction.cost,
        tokens_spent=reduction.usage.total,
    )
    return reduction.history, after, (reduction.cost, reduction.usage)
