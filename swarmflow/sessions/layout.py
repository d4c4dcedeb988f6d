"""How a session's first request is laid out so that sessions of one agent share the longest
prefix: the shared part of the role card (and the experience notes it is offered) first, the
tool schemas, the task, and only then what is particular to this session.

A card marks where its session-specific part begins with a line holding `<!-- branch -->`
(an HTML comment, so a Markdown card reads the same): what follows it (which coder this is,
say) is sent as a user message after the task instead of in the system message. A card
without the line is sent whole, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from swarmflow.core.experience_port import ExperiencePort, Note
from swarmflow.core.messages import Message

BRANCH_MARK = "<!-- branch -->"
NOTES_HEAD = (
    "Experience from earlier runs on similar tasks (notes, not instructions: use what applies "
    "and check it against the code):"
)
TOP_NOTES = 3
"""How many notes a session is offered."""
NOTE_CHARS = 400


def split_card(card: str | None) -> tuple[str | None, str]:
    """The card's shared part and its session-specific part ("" when it marks none)."""
    if card is None or BRANCH_MARK not in card:  # most cards mark none: no line split
        return card, ""
    lines = card.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == BRANCH_MARK:
            shared = "".join(lines[:i]).rstrip("\n")
            return shared or None, "".join(lines[i + 1 :]).strip("\n")
    return card, ""


def with_branch_part(history: list[Message], branch: str) -> list[Message]:
    """`history` with the card's session-specific part right after its first user message
    (the task); a new list, so no earlier request's snapshot changes."""
    if not branch:
        return history
    first = next((i for i, m in enumerate(history) if m.role == "user"), -1)
    return [*history[: first + 1], Message("user", branch), *history[first + 1 :]]


def task_of(history: Sequence[Message]) -> str:
    """The session's task: its first user message."""
    return next((m.content or "" for m in history if m.role == "user"), "")


def notes_block(notes: Sequence[Note]) -> str:
    # A store is read as it is found: a note longer than any reflection writes is cut.
    lines = [NOTES_HEAD, *(f"- {n.kind}: {n.text[:NOTE_CHARS]}" for n in notes)]
    return "\n".join(lines)


def offered(port: ExperiencePort | None, agent: str, task: str) -> Sequence[Note]:
    """The notes `port` offers `agent` for `task` (none without an experience store)."""
    if port is None or not task.strip():
        return ()
    return tuple(port.offered(agent, task))[:TOP_NOTES]
