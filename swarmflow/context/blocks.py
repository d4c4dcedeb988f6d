"""Where a compaction cuts: the block rule (docs/context.md, "The block rule").

A prompt cache serves the longest prefix a request shares with what it has seen, so a
compaction costs the tokens it rewrites after the part it keeps byte for byte, and every step
between two compactions costs only what it appends. The rule keeps the head of the history
(the task and the oldest turns, then the notes of earlier compactions, each at the position it
was first written) and compacts the block between that head and the latest turn.

How large a block: a compaction is a fixed cost (`rewrite`: the tokens it writes anew) and a
longer prompt a running one (every step re-sends the kept tokens, cached, at a fraction
`CACHED_PRICE` of the price). The block that makes the sum smallest is the economic order
quantity, `sqrt(2 · rewrite · growth / CACHED_PRICE)`, where `growth` is what a step adds to
the history, observed on the turns since the last compaction. The block is never smaller than
two steps' growth, and the history after a compaction (the low watermark) never below the
policy's `low` share of the room: a large budget keeps a large prompt, a tight one compacts
often and little.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from swarmflow.context.history import is_summary, turns
from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.messages import Message
from swarmflow.core.tokens import message_units

CACHED_PRICE = 0.1
"""A cached prompt token's price as a share of an uncached one (OpenAI, Anthropic, DeepSeek
and vLLM deployments bill 0.1 to 0.5; the lower the share, the larger the kept prompt)."""
DEFAULT_REWRITE_SHARE = 1 / 40
"""What a compaction is expected to write anew before one has been seen: a share of the room."""


@dataclass(frozen=True, slots=True)
class Block:
    """One compaction's plan: keep `history[:keep]` byte for byte, reduce the rest to `target`."""

    keep: int
    """Messages kept at the head (at least the task)."""
    kept_units: int
    target: int
    """What the whole history is reduced to: the low watermark, in estimator units."""
    growth: int
    """The history's observed growth per step, in units."""
    rewrite: int
    """What the compaction is expected to write anew (its note and the turns it moves)."""


def plan(history: Sequence[Message], room: int, policy: ContextPolicy) -> Block:
    """The block rule applied to `history` in a room of `room` units."""
    sizes = [message_units(m) for m in history]
    growth = _growth(history, sizes)
    rewrite = _rewrite(history, sizes, room)
    high = int(room * policy.high)
    block = int(math.sqrt(2 * rewrite * growth / CACHED_PRICE)) if growth else high
    block = max(block, 2 * growth)
    target = max(high - block, int(room * policy.low))
    last = _last_turn_start(history)
    starts = [m.role != "tool" for m in history]
    # A latest turn larger than a step's growth (a long log just read) is reduced by the next
    # compaction once it is older: the head it would push out stays if the room holds both.
    latest = sum(sizes[last:])
    most = min(target - rewrite - min(latest, growth), room - rewrite - latest)
    keep, kept = _head(sizes, starts, last, most)
    return Block(keep, kept, target, growth, rewrite)


def _growth(history: Sequence[Message], sizes: Sequence[int]) -> int:
    """Mean units a step added since the last note (since the task when there is none)."""
    start = _after_last_note(history)
    steps = turns(history[start:])
    if not steps:
        return 0
    return sum(sizes[start:]) // len(steps)


def _rewrite(history: Sequence[Message], sizes: Sequence[int], room: int) -> int:
    """The last note's size (what the previous compaction wrote), or a share of the room."""
    for i in range(len(history) - 1, 0, -1):
        if is_summary(history[i]):
            return max(sizes[i], 1)
    return max(int(room * DEFAULT_REWRITE_SHARE), 1)


def _after_last_note(history: Sequence[Message]) -> int:
    for i in range(len(history) - 1, 0, -1):
        if is_summary(history[i]):
            return i + 1
    return 1


def _last_turn_start(history: Sequence[Message]) -> int:
    """Where the latest turn (a message and the tool results after it) starts."""
    i = len(history) - 1
    while i > 0 and history[i].role == "tool":
        i -= 1
    return max(i, 1)


def _head(sizes: Sequence[int], starts: Sequence[bool], end: int, most: int) -> tuple[int, int]:
    """The longest head of at most `most` units ending at or before `end`, where a turn
    starts (never between a call and its results): its length and its units. The task stays."""
    keep, kept = 1, sizes[0] if sizes else 0
    total = kept
    for i in range(1, end):
        total += sizes[i]
        if total > most:
            break
        if i + 1 == end or starts[i + 1]:
            keep, kept = i + 1, total
    return keep, kept
