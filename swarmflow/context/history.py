"""Measuring a history and cutting it into turns: what every processor works with."""

from __future__ import annotations

from collections.abc import Sequence

from swarmflow.core.messages import Message
from swarmflow.core.tokens import message_units


def history_units(history: Sequence[Message]) -> int:
    """The history's size in estimator units (`swarmflow.core.tokens`)."""
    return sum(message_units(m) for m in history)


def turns(messages: Sequence[Message]) -> list[list[Message]]:
    """`messages` grouped into turns: a message with the tool results that follow it, so a
    tool result never loses the call that asked for it."""
    out: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and out:
            out[-1].append(m)
        else:
            out.append([m])
    return out


def flat(groups: Sequence[Sequence[Message]]) -> list[Message]:
    return [m for group in groups for m in group]


def old_end(history: Sequence[Message], keep_recent: int) -> int:
    """Where the older part ends: before the last `keep_recent` messages, moved back to a
    turn's start, so that no level splits a call from its results."""
    end = max(len(history) - keep_recent, 0)
    while 0 < end < len(history) and history[end].role == "tool":
        end -= 1
    return end


SUMMARY_HEAD = "[summary of the earlier conversation, written to fit the context window]"
"""The first line of a summary message: a later summary or compaction keeps it."""
COMPACTED_HEAD = "[the earlier conversation was compacted to fit the context window]"


def is_summary(message: Message) -> bool:
    content = message.content or ""
    return message.role == "user" and content.startswith((SUMMARY_HEAD, COMPACTED_HEAD))


def leading(history: Sequence[Message]) -> int:
    """How many messages at the start stay put: the task, and a summary right after it."""
    if not history:
        return 0
    return 2 if len(history) > 1 and is_summary(history[1]) else 1
