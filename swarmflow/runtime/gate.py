"""A turn gate: one holder at a time, waiters served first come, first served.

`anyio.Lock` checks its owner task on every release and takes a checkpoint on every acquire;
a session's turns only need mutual exclusion, taken without a checkpoint when nobody holds
the gate. The gate is handed straight to the next waiter on release, so a turn that is
already waiting cannot be overtaken by a later caller.
"""

from __future__ import annotations

from collections import deque
from types import TracebackType

import anyio


class TurnGate:
    """Mutual exclusion for turns on one session."""

    __slots__ = ("_busy", "_waiters")

    def __init__(self) -> None:
        self._busy = False
        self._waiters: deque[anyio.Event] = deque()

    def locked(self) -> bool:
        return self._busy

    def take(self) -> bool:
        """Take the gate if it is free, without waiting; whether it was taken."""
        if self._busy:
            return False
        self._busy = True
        return True

    async def acquire(self) -> None:
        if self.take():
            return
        handed = anyio.Event()
        self._waiters.append(handed)
        try:
            await handed.wait()
        except BaseException:
            if handed.is_set():  # handed the gate as the wait was cancelled: pass it on
                self.release()
            else:
                self._waiters.remove(handed)
            raise

    def release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # stays busy: ownership moves to that waiter
        else:
            self._busy = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
