"""Dead-loop collapse: a run of turns making the same tool calls with the same results folds
into the first of them and a note saying how many times it happened."""

from __future__ import annotations

from dataclasses import replace

from swarmflow.context.history import flat, turns
from swarmflow.context.registry import Reduction
from swarmflow.context.surroundings import Pressure
from swarmflow.core.messages import Message

FOLDED = "\n[the same call returned this same result {times} times in a row; {folded} folded]"


def _signature(turn: list[Message]) -> tuple[object, ...] | None:
    """What makes two turns the same step: the calls' names and arguments, and the results."""
    ask = turn[0]
    if ask.role != "assistant" or not ask.tool_calls:
        return None
    calls = tuple((c.name, c.arguments) for c in ask.tool_calls)
    return (ask.content or "", calls, tuple(m.content for m in turn[1:]))


async def collapse_loops(history: list[Message], pressure: Pressure) -> Reduction | None:
    """Fold each run of identical turns, the latest turn excepted (the model acts on it)."""
    if len(history) < 3:
        return None
    head, groups = history[0], turns(history[1:])
    last = groups.pop()
    out: list[list[Message]] = []
    folded = runs = 0
    i = 0
    while i < len(groups):
        sig = _signature(groups[i])
        j = i + 1
        while sig is not None and j < len(groups) and _signature(groups[j]) == sig:
            j += 1
        first = groups[i]
        if j - i > 1:
            runs += 1
            folded += j - i - 1
            note = FOLDED.format(times=j - i, folded=j - i - 1)
            closing = first[-1]
            first = [*first[:-1], replace(closing, content=(closing.content or "") + note)]
        out.append(first)
        i = j
    if not folded:
        return None
    removed = f"{folded} repeated turns in {runs} loops folded"
    return Reduction([head, *flat(out), *last], removed)
