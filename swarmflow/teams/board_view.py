"""The board's data, and what an agent is shown of it: mentions and thread snapshots as text.

A snapshot shows the threads an agent takes part in and, in each, the messages that reached it
(its own and those whose sender has an edge to it), in `seq` order. The text for the model is
bounded: the last `SHOWN_MESSAGES` messages of each thread, each cut at `SHOWN_CHARS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

SHOWN_MESSAGES = 20
"""Messages per thread a rendered snapshot shows (the latest ones)."""
SHOWN_CHARS = 2_000
"""Characters of one message a rendered snapshot shows."""


@dataclass(frozen=True, slots=True)
class Mention:
    """An @mention waiting for (or handed to) its recipient."""

    thread: str
    sender: str
    content: str
    seq: int


@dataclass(slots=True)
class Post:
    """One message on a thread."""

    seq: int
    thread: str
    sender: str
    content: str
    mentions: tuple[str, ...]
    recipients: tuple[str, ...]
    """The participants it reached (the sender included)."""


@dataclass(slots=True)
class Thread:
    """A thread: its creator, participants and messages in `seq` order."""

    name: str
    creator: str
    participants: tuple[str, ...]
    posts: list[Post] = field(default_factory=list)


class MessageView(BaseModel):
    """One message as a snapshot shows it."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built at the first snapshot

    seq: int
    sender: str
    content: str
    mentions: list[str] = []


class ThreadView(BaseModel):
    """One thread as a snapshot shows it."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built at the first snapshot

    name: str
    creator: str
    participants: list[str]
    messages: list[MessageView] = []


class BoardSnapshot(BaseModel):
    """The threads an agent can see (or all of them), JSON-able."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built at the first snapshot

    agent: str | None = None
    threads: list[ThreadView] = []


def thread_view(thread: Thread, agent: str | None) -> ThreadView:
    """`thread` as `agent` sees it (None: every message)."""
    messages = [
        MessageView(seq=p.seq, sender=p.sender, content=p.content, mentions=list(p.mentions))
        for p in thread.posts
        if agent is None or agent in p.recipients
    ]
    return ThreadView(
        name=thread.name,
        creator=thread.creator,
        participants=list(thread.participants),
        messages=messages,
    )


def render_mention(mention: Mention) -> str:
    """One mention as the model reads it."""
    return f"@mention in #{mention.thread} from {mention.sender} (message {mention.seq}):\n" + _cut(
        mention.content
    )


def render_mentions(mentions: Sequence[Mention]) -> str:
    """Mentions that arrived since the agent's last step, as one block of text."""
    if not mentions:
        return ""
    head = f"{len(mentions)} new mention{'s' if len(mentions) != 1 else ''} on the board:"
    return "\n\n".join([head, *(render_mention(m) for m in mentions)])


def render_snapshot(snapshot: BoardSnapshot) -> str:
    """Every thread of the snapshot, its latest messages first cut to a readable size."""
    if not snapshot.threads:
        return "The board has no thread you take part in."
    return "\n\n".join(_render_thread(t) for t in snapshot.threads)


def _render_thread(thread: ThreadView) -> str:
    lines = [f"#{thread.name} (created by {thread.creator}; {', '.join(thread.participants)})"]
    hidden = len(thread.messages) - SHOWN_MESSAGES
    if hidden > 0:
        lines.append(f"  ... {hidden} earlier message{'s' if hidden != 1 else ''}")
    for m in thread.messages[-SHOWN_MESSAGES:]:
        to = f" -> @{', @'.join(m.mentions)}" if m.mentions else ""
        lines.append(f"  [{m.seq}] {m.sender}{to}: {_cut(m.content)}")
    if not thread.messages:
        lines.append("  (no messages yet)")
    return "\n".join(lines)


def _cut(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]} [... {len(text) - SHOWN_CHARS} more characters]"
