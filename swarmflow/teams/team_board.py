"""The board as a Team run's roles see it: passive awareness, wake-ups, and who is listening.

- A `passive` role hears its mentions at its next step boundary (`hear`): they are drained from
  the board and added to its context, with no step and no model call of their own. An idle
  passive role is woken with them as its next turn.
- A `blocking` role hears a mention only by calling `wait_for_mention` (one step per wait). An
  idle blocking role with an unread mention is woken once with a short notice (who, which
  thread, not the content) so that it can call `wait_for_mention`; a notice it ignores is not
  repeated until a newer mention arrives.
- `TeamBoard` is the `BoardPort` the roles' tools use: the team's own board, counting the
  roles parked in `wait_for_mention`, so the team can tell "everyone is waiting and nothing is
  pending" (idle) from work in progress.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from swarmflow.teams.board import Board
from swarmflow.teams.result import Listen


class TeamBoard:
    """One team's board for its roles; counts the roles parked in a blocking wait."""

    def __init__(self, board: Board, on_park: Callable[[], None]) -> None:
        self.board = board
        self.parked: dict[str, int] = {}
        self._on_park = on_park

    def create_thread(self, sender: str, name: str, participants: Sequence[str]) -> str:
        return self.board.create_thread(sender, name, participants)

    def send_message(self, sender: str, thread: str, content: str, mentions: Sequence[str]) -> str:
        return self.board.send_message(sender, thread, content, mentions)

    async def wait_for_mention(self, agent: str, timeout: float | None) -> str:
        """The board's blocking receive; while it waits, `agent` counts as parked."""
        self.parked[agent] = self.parked.get(agent, 0) + 1
        try:
            self._on_park()
            return await self.board.wait_for_mention(agent, timeout)
        finally:
            self.parked[agent] -= 1

    @property
    def parked_total(self) -> int:
        return sum(self.parked.values())


class Hearing:
    """Which mentions a role may still be given, and the text it is given them in."""

    def __init__(self, board: Board, modes: dict[str, Listen]) -> None:
        self.board = board
        self.modes = modes
        self._offered: dict[str, int] = {}
        """Blocking roles: the newest mention they were woken for."""

    def deliverable(self, name: str) -> bool:
        """`name` has a mention it has not been given (passive) or told about (blocking)."""
        if not self.board.has_pending(name):
            return False
        if self.modes[name] == "passive":
            return True
        return self.board.pending(name)[-1].seq > self._offered.get(name, 0)

    def hear(self, name: str) -> str:
        """A passive role's mentions, drained, as text for its context ("" when none)."""
        if not self.board.has_pending(name):
            return ""
        return self.board.render_mentions(self.board.take_mentions(name))

    def wake_text(self, name: str) -> str:
        """The turn that wakes an idle role, or "" when there is nothing for it any more."""
        if not self.deliverable(name):
            return ""
        if self.modes[name] == "passive":
            return self.hear(name)
        pending = self.board.pending(name)
        newest = pending[-1]
        self._offered[name] = newest.seq
        return (
            f"You have {len(pending)} unread mention(s) on the board, the newest from "
            f"{newest.sender} in #{newest.thread}. Call wait_for_mention to read them."
        )
