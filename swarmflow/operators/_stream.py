"""An async iterator fed by background work that belongs to the branch that opened it.

The producer runs beside the opening branch (see `runtime.background`): it stops when that
branch ends or is cancelled, and when the consumer closes the iterator or leaves its
`async with` block. A mistake in the producer reaches the consumer at its next item.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.lowlevel

from swarmflow.core.errors import ConfigError
from swarmflow.runtime.background import current_work

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream

T = TypeVar("T")
Producer = Callable[["MemoryObjectSendStream[Any]"], Awaitable[None]]


class BackgroundStream(Generic[T]):
    """Items produced by `producer` in the background, received in completion order."""

    def __init__(self, operator: str, producer: Producer, buffer: float = math.inf) -> None:
        work = current_work()
        if work is None:
            raise ConfigError(f"{operator} can only be used inside a running flow")
        send, self._receive = anyio.create_memory_object_stream[T](buffer)
        self._job = work.start(lambda: self._produce(producer, send), self._receive.close)

    async def _produce(self, producer: Producer, send: MemoryObjectSendStream[Any]) -> None:
        try:
            async with send:
                await anyio.lowlevel.checkpoint_if_cancelled()  # stopped before it began
                await producer(send)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the consumer went away; nothing is waiting for the rest
        except Exception as exc:  # surfaces to the consumer, not as a crash of its group
            self._job.error = exc

    def __aiter__(self) -> BackgroundStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._receive.close()
            await self._job.done.wait()  # the producer may still be recording why it stopped
            error = self._job.claim_error()
            if error is not None:
                raise error from None
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Cancel the work in flight and wait until it has wound down."""
        await self._job.stop()

    async def collect(self) -> list[T]:
        """Every remaining item, in completion order."""
        return [item async for item in self]

    async def __aenter__(self) -> BackgroundStream[T]:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
