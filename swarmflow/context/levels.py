"""The deterministic levels that rewrite older observations in place: structure-aware
reduction and observation masking."""

from __future__ import annotations

from dataclasses import replace

from swarmflow.context.history import old_end
from swarmflow.context.offload import OFFLOADED
from swarmflow.context.registry import Reduction
from swarmflow.context.structure import reduce_text
from swarmflow.context.surroundings import Pressure
from swarmflow.core.messages import Message

STRUCTURE_MIN_CHARS = 1_500
"""Observations shorter than this are left whole by structure-aware reduction."""
ELIDED = "[observation elided to fit the context window: {n} characters]"
MASK_MIN_CHARS = 200


async def reduce_structure(history: list[Message], pressure: Pressure) -> Reduction | None:
    """Older observations reduced by what they are: diffs, logs, JSON, tables, repeats."""
    end = old_end(history, pressure.policy.keep_recent)
    out = list(history)
    kinds: dict[str, int] = {}
    for i in range(1, end):
        m = out[i]
        if m.role != "tool" or len(m.content or "") < STRUCTURE_MIN_CHARS:
            continue
        reduced, kind = reduce_text(m.content or "")
        if kind:
            out[i] = replace(m, content=reduced)
            kinds[kind] = kinds.get(kind, 0) + 1
    if not kinds:
        return None
    removed = "; ".join(f"{n} × {kind}" for kind, n in kinds.items())
    return Reduction(out, removed)


async def elide_observations(history: list[Message], pressure: Pressure) -> Reduction | None:
    """Observation masking: older observations become a one-line note. An offloaded one
    keeps its first line, which names the file holding it."""
    end = old_end(history, pressure.policy.keep_recent)
    out = list(history)
    masked = chars = 0
    for i in range(1, end):
        m = out[i]
        content = m.content or ""
        if m.role != "tool" or len(content) <= MASK_MIN_CHARS:
            continue
        if content.startswith(OFFLOADED):
            handle = content.split("\n", 1)[0]
            if handle == content:
                continue
            out[i] = replace(m, content=handle)
        else:
            out[i] = replace(m, content=ELIDED.format(n=len(content)))
        masked += 1
        chars += len(content)
    if not masked:
        return None
    return Reduction(out, f"{masked} older observations masked ({chars:,} characters)")
