"""The board's journal records, and how a resumed run rebuilds its board from them.

Three kinds, written before the change they record is visible to anyone (docs/durability.md):

- `board_thread`: `thread`, `creator`, `participants`;
- `board_message`: `seq`, `thread`, `sender`, `content`, `mentions`, `recipients`;
- `board_delivered`: `seq`, `recipient`, `mode`, `session` (the session that took it, if any).

A delivery counts on resume only when the session that took it finished a call or turn later in
the journal (a `call_finished` record of that session follows it): the call that was in flight
when the run died starts again and must be able to take the mention again. A delivery with no
session (an agent outside the process, over HTTP) always counts.

A message posted by a session that finished no call or turn after it was cut off: the call
that posted it runs again on resume and will post it again, and the board answers that repeat
with the first post instead of a second one (`Board.adopt_post(cut_off=True)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from swarmflow.teams.board_view import Post, Thread


class Restorable(Protocol):
    """What `restore` needs of a board (`runtime.board.Board`)."""

    def adopt_thread(self, thread: Thread) -> None: ...

    def adopt_post(self, post: Post, pending: Sequence[str], *, cut_off: bool) -> None: ...


def thread_record(thread: Thread) -> dict[str, Any]:
    return {"kind": "board_thread", "thread": thread.name, "creator": thread.creator,
            "participants": list(thread.participants)}  # fmt: skip


def message_record(post: Post, session: str | None) -> dict[str, Any]:
    return {"kind": "board_message", "seq": post.seq, "thread": post.thread,
            "sender": post.sender, "content": post.content, "mentions": list(post.mentions),
            "recipients": list(post.recipients), "session": session}  # fmt: skip


def delivered_record(seq: int, recipient: str, mode: str, session: str | None) -> dict[str, Any]:
    return {"kind": "board_delivered", "seq": seq, "recipient": recipient, "mode": mode,
            "session": session}  # fmt: skip


def restore(
    board: Restorable, records: Sequence[dict[str, Any]], marks: Sequence[tuple[int, str]]
) -> None:
    """Rebuild `board` from an earlier process's records. `marks`: (how many board records
    came before it, session) for every `call_finished` record."""
    finished_after = _last_finished(marks)
    settled = _settled_deliveries(records, finished_after)
    for position, record in enumerate(records):
        kind = record.get("kind")
        if kind == "board_thread":
            board.adopt_thread(_thread(record))
        elif kind == "board_message":
            post = _post(record)
            waiting = [m for m in post.mentions if (post.seq, m) not in settled]
            poster = record.get("session")
            cut_off = bool(poster) and finished_after.get(str(poster), -1) < position
            board.adopt_post(post, waiting, cut_off=cut_off)


def _last_finished(marks: Sequence[tuple[int, str]]) -> dict[str, int]:
    """Per session: how many board records preceded its last finished call or turn."""
    finished_after: dict[str, int] = {}
    for position, session in marks:
        finished_after[session] = max(finished_after.get(session, -1), position)
    return finished_after


def _settled_deliveries(
    records: Sequence[dict[str, Any]], finished_after: dict[str, int]
) -> set[tuple[int, str]]:
    """(seq, recipient) of every delivery that a later finished call of its session settled."""
    settled: set[tuple[int, str]] = set()
    for position, record in enumerate(records):
        if record.get("kind") != "board_delivered":
            continue
        taker = record.get("session")
        if not taker or finished_after.get(str(taker), -1) > position:
            settled.add((int(record["seq"]), str(record["recipient"])))
    return settled


def _thread(record: dict[str, Any]) -> Thread:
    return Thread(str(record["thread"]), str(record["creator"]),
                  tuple(str(p) for p in record["participants"]))  # fmt: skip


def _post(record: dict[str, Any]) -> Post:
    return Post(
        seq=int(record["seq"]),
        thread=str(record["thread"]),
        sender=str(record["sender"]),
        content=str(record["content"]),
        mentions=tuple(str(m) for m in record.get("mentions", ())),
        recipients=tuple(str(r) for r in record.get("recipients", ())),
    )
