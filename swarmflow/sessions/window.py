"""Context management: keep the whole request inside the agent's context budget.

The budget covers everything sent: the role card, the tool schemas and the history. Sizes are
estimator units (`swarmflow.core.tokens`); the session converts its token budget with the
model's learned rate. Reduction is progressive, recent messages kept whole the longest:

1. `elide_observations`: tool observations older than the last few messages are replaced by
   a one-line note.
2. `drop_oldest`: the oldest turns after the first message (the task) go, an assistant turn
   always together with its tool results, never the latest turn.
3. `cut_observations`: what is left is still too large (one huge observation), so the
   largest observations are cut, each with a note saying how much was kept. An observation is
   never dropped while the call that asked for it stays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from swarmflow.core.messages import Message
from swarmflow.core.tokens import message_units, text_units

KEEP_RECENT = 6
"""Messages at the end of the history whose observations are never elided."""
ELIDED = "[observation elided to fit the context window: {n} characters]"
CUT = "\n[cut to fit the context window: the first {kept} of {total} characters are shown]"
MIN_KEPT = 200
"""Characters an observation keeps when cut (unless even that cannot fit)."""


@dataclass(frozen=True, slots=True)
class Fitted:
    """A history reduced to fit, and the last level that was needed."""

    history: list[Message]
    level: str


def history_units(history: list[Message]) -> int:
    return sum(message_units(m) for m in history)


def fit(history: list[Message], budget: int) -> Fitted:
    """`history` reduced, level by level, until it fits `budget` units (or nothing is left)."""
    reduced = elide_observations(history)
    if history_units(reduced) <= budget:
        return Fitted(reduced, "elide_observations")
    reduced = drop_oldest(reduced, budget)
    if history_units(reduced) <= budget:
        return Fitted(reduced, "drop_oldest")
    return Fitted(cut_observations(reduced, budget), "cut_observations")


def elide_observations(history: list[Message]) -> list[Message]:
    """Level 1: shorten tool observations older than the last few messages."""
    cut = max(len(history) - KEEP_RECENT, 0)
    out = []
    for i, m in enumerate(history):
        long_observation = m.role == "tool" and m.content and len(m.content) > 200
        out.append(
            replace(m, content=ELIDED.format(n=len(m.content or "")))
            if i < cut and long_observation
            else m
        )
    return out


def drop_oldest(history: list[Message], budget: int) -> list[Message]:
    """Level 2: drop the oldest turns after the first message until the rest fits `budget`.

    A turn is a message with the tool results that follow it, so a tool result never loses
    the call that asked for it. The latest turn always stays.
    """
    if not history:
        return history
    head, turns = history[0], _turns(history[1:])
    total = message_units(head) + sum(history_units(t) for t in turns)
    while len(turns) > 1 and total > budget:
        total -= history_units(turns.pop(0))
    return [head, *(m for turn in turns for m in turn)]


def _turns(messages: list[Message]) -> list[list[Message]]:
    turns: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and turns:
            turns[-1].append(m)
        else:
            turns.append([m])
    return turns


def cut_observations(history: list[Message], budget: int) -> list[Message]:
    """Level 3: cut the largest tool observations, each with a note, until `budget` fits."""
    out = list(history)
    excess = history_units(out) - budget
    by_size = sorted(
        (i for i, m in enumerate(out) if m.role == "tool" and m.content),
        key=lambda i: -text_units(out[i].content),
    )
    for i in by_size:
        if excess <= 0:
            break
        before = message_units(out[i])
        content = out[i].content or ""
        out[i] = replace(out[i], content=_cut(content, text_units(content) - excess))
        excess -= before - message_units(out[i])
    return out


def _cut(text: str, target_units: int) -> str:
    """`text` shortened to about `target_units` units, with a note saying what was kept."""
    room = max(target_units - text_units(CUT.format(kept=len(text), total=len(text))), MIN_KEPT)
    keep = min(len(text), room)  # a character is at least one unit
    while keep > 0 and text_units(text[:keep]) > room:
        keep = keep * 3 // 4  # non-ASCII text holds fewer characters per unit
    if keep >= len(text):
        return text
    return text[:keep] + CUT.format(kept=keep, total=len(text))
