"""How a resumed run rebuilds its board from the events of the earlier processes.

The board writes no journal records of its own: each change is an event, on disk before the
change is visible to anyone (the write barrier, docs/durability.md), and those events are the
board's record:

- `thread_created`: `thread`, `creator`, `participants`;
- `board_message_posted`: `message_seq`, `thread`, `sender`, `text + rest` (the content),
  `mentions`, `recipients`, and the posting session (`session`, if any);
- `mention_delivered`: `message_seq`, `recipient`, `mode`, and the session that took it
  (`session`, if any).

Each journaled call or turn that finished records where the event stream stood (`event_seq`).
A delivery counts on resume only when the session that took it finished a call or turn after
it: the call that was in flight when the run died starts again and must be able to take the
mention again. A delivery with no session (an agent outside the process, over HTTP) always
counts.

A message posted by a session that finished no call or turn after it was cut off: the call
that posted it runs again on resume and will post it again, and the board answers that repeat
with the first post instead of a second one (`Board.adopt_post(cut_off=True)`).

A team's board also remembers what woke its roles (`wakeups`): the mentions an idle passive
role was woken with were taken by no session (the team's listener took them, `session` is
empty, `mode` passive), one group of consecutive deliveries per wake-up. When the resumed
team opens its board again, those groups are handed out again, with no new event
(`Board.wake_again`): each wakes its role with the same text as before, so the turn it woke is
replayed from the journal, and a team whose course ran through wake-ups comes back turn for
turn instead of stopping after its lead's first turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from swarmflow.record.events import BoardMessagePosted, MentionDelivered, ThreadCreated
from swarmflow.record.journal import BoardFact
from swarmflow.teams.board_view import Post, Thread


class Restorable(Protocol):
    """What `restore` needs of a board (`teams.board.Board`)."""

    def adopt_thread(self, thread: Thread) -> None: ...

    def adopt_post(self, post: Post, pending: Sequence[str], *, cut_off: bool) -> None: ...


def restore(
    board: Restorable, facts: Sequence[BoardFact], finished: Sequence[tuple[int, str]]
) -> None:
    """Rebuild `board` from an earlier process's board events (in log order). `finished`:
    (`event_seq`, session) of every finished call or turn in the journal."""
    last = _last_finished(finished)

    def settled(session: str | None, seq: int) -> bool:
        """Whether a later finished call of `session` settled the event at `seq`."""
        return not session or last.get(session, -1) > seq

    delivered = {
        (fact.message_seq, fact.recipient)
        for fact in facts
        if isinstance(fact, MentionDelivered) and settled(fact.session, fact.seq)
    }
    for fact in facts:
        if isinstance(fact, ThreadCreated):
            board.adopt_thread(Thread(fact.thread, fact.creator, tuple(fact.participants)))
        elif isinstance(fact, BoardMessagePosted):
            post = Post(
                seq=fact.message_seq,
                thread=fact.thread,
                sender=fact.sender,
                content=fact.text + fact.rest,
                mentions=tuple(fact.mentions),
                recipients=tuple(fact.recipients),
            )
            waiting = [m for m in post.mentions if (post.seq, m) not in delivered]
            board.adopt_post(post, waiting, cut_off=not settled(fact.session, fact.seq))


def _last_finished(finished: Sequence[tuple[int, str]]) -> dict[str, int]:
    """Per session: the `event_seq` of its last finished call or turn."""
    last: dict[str, int] = {}
    for seq, session in finished:
        last[session] = max(last.get(session, -1), seq)
    return last


def wakeups(facts: Sequence[BoardFact]) -> list[tuple[str, list[int]]]:
    """The wake-ups among a team board's deliveries, in log order: (recipient, the message
    numbers one wake-up handed it), one group per run of consecutive delivery events."""
    groups: list[tuple[str, list[int]]] = []
    last_seq = -2
    for fact in facts:
        if not isinstance(fact, MentionDelivered) or fact.session or fact.mode != "passive":
            continue
        if groups and groups[-1][0] == fact.recipient and fact.seq == last_seq + 1:
            groups[-1][1].append(fact.message_seq)
        else:
            groups.append((fact.recipient, [fact.message_seq]))
        last_seq = fact.seq
    return groups
