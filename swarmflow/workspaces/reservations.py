"""Short reservations of shared-workspace files: one holder at a time, never waited on.

`reserve` answers at once, granted or refused with the holder and how long it still holds, so
two agents reserving in opposite order cannot deadlock: neither ever waits. A reservation ends
at its timeout (read off an injectable clock), when its holder releases it, or when the
holder's session ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from swarmflow.core.errors import ToolError

MAX_SECONDS = 600.0
"""The longest one reservation may hold (STORM's default is 30 s)."""


class FileReserved(ToolError):
    """Refused: another session holds the file."""

    def __init__(self, message: str, *, path: str, holder: str, seconds_left: float) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder
        self.seconds_left = seconds_left


@dataclass(frozen=True, slots=True)
class Reservation:
    session: str
    agent: str
    until: float


class Reservations:
    """Who holds which file, until when."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._held: dict[str, Reservation] = {}

    def holder(self, key: str) -> Reservation | None:
        """The live reservation of `key` (an expired one is dropped)."""
        found = self._held.get(key)
        if found is not None and found.until <= self.clock():
            del self._held[key]
            return None
        return found

    def reserve(self, key: str, session: str, agent: str, seconds: float) -> float:
        """Hold `key` for `seconds` (renewing one's own); the seconds granted."""
        if not 0 < seconds <= MAX_SECONDS:
            raise ToolError(f"reserve {key!r}: seconds must be above 0 and at most {MAX_SECONDS:g}")
        self.refuse_others(key, session, "reserve")
        self._held[key] = Reservation(session, agent, self.clock() + seconds)
        return seconds

    def release(self, key: str, session: str) -> bool:
        """Give `key` back; False when `session` did not hold it."""
        found = self.holder(key)
        if found is None or found.session != session:
            return False
        del self._held[key]
        return True

    def release_all(self, session: str) -> list[str]:
        """End every reservation of `session` (its session ended)."""
        mine = [key for key, r in self._held.items() if r.session == session]
        for key in mine:
            del self._held[key]
        return mine

    def refuse_others(self, key: str, session: str, what: str) -> None:
        """Raise FileReserved when a session other than `session` holds `key`."""
        found = self.holder(key)
        if found is None or found.session == session:
            return
        left = round(found.until - self.clock(), 1)
        raise FileReserved(
            f"{what} of {key!r} refused: {found.agent} has reserved it for {left:g}s more. "
            "Work on another file meanwhile, or ask them to release it.",
            path=key,
            holder=found.agent,
            seconds_left=left,
        )
