"""Context management: keep the model-visible history inside the agent's context budget.

Level 1 elides old tool observations (the newest stay whole); level 2 drops the oldest turns
but keeps the first user message, which states the task.
"""

from __future__ import annotations

from dataclasses import replace

from swarmflow.core.messages import Message, estimate_tokens

KEEP_RECENT = 6
ELIDED = "[observation elided to fit the context window: {n} characters]"


def message_tokens(m: Message) -> int:
    total = 4 + estimate_tokens(m.content)
    for call in m.tool_calls:
        total += 4 + estimate_tokens(call.name) + estimate_tokens(call.arguments)
    return total


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
    """Level 2: drop the oldest messages after the first until the rest fits `budget` tokens.

    A tool message is never left without the assistant turn that asked for it.
    """
    if not history:
        return history
    head, rest = history[0], history[1:]
    total = message_tokens(head) + sum(message_tokens(m) for m in rest)
    while rest and total > budget:
        total -= message_tokens(rest.pop(0))
        while rest and rest[0].role == "tool":
            total -= message_tokens(rest.pop(0))
    return [head, *rest]
