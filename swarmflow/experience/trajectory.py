"""A session as the reflector reads it: its messages as lines of text, each piece cut short,
and the history kept in that form for a resumed run (`brief`).

A resumed run replays its finished agent calls without running their sessions; the journal
keeps each one's `brief` history, so the run's reflection at its end reads every session,
replayed or run, and sends what the interrupted process would have sent (then a reflection
that had settled is replayed from the journal, not paid again).
"""

from __future__ import annotations

from collections.abc import Sequence

from swarmflow.core.experience_port import Trajectory
from swarmflow.core.messages import Message, ToolCall

TRAJECTORY_CHARS = 24_000
"""The most of an agent's sessions one reflection reads (the start and the end are kept)."""
PIECE_CHARS = 400
"""The most of one message's text or one call's arguments a reflection reads."""


def trajectory_text(sessions: list[Trajectory]) -> str:
    """The agent's sessions as text for the reflector: what it did and how each ended."""
    parts: list[str] = []
    for number, session in enumerate(sessions, 1):
        parts.append(f"== session {number}: ended {session.detail or 'normally'}")
        for m in session.history:
            parts.extend(_lines(m))
    text = "\n".join(parts)
    if len(text) <= TRAJECTORY_CHARS:
        return text
    half = TRAJECTORY_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half:,} characters …]\n{text[-half:]}"


def _lines(m: Message) -> list[str]:
    out = []
    if m.content:
        who = f"result of {m.name}" if m.role == "tool" else m.role
        out.append(f"[{who}] {_short(m.content)}")
    out.extend(f"[called {c.name}] {_short(c.arguments)}" for c in m.tool_calls)
    return out


def _short(text: str) -> str:
    return text if len(text) <= PIECE_CHARS else text[:PIECE_CHARS] + " […]"


def brief(history: Sequence[Message]) -> list[Message]:
    """`history` with each text and each call's arguments cut as the reflector cuts them: it
    reads the same lines from this as from the whole history."""
    return [
        Message(
            m.role,
            _short(m.content) if m.content else m.content,
            tuple(ToolCall(c.id, c.name, _short(c.arguments)) for c in m.tool_calls),
            m.tool_call_id,
            m.name,
        )
        for m in history
    ]
