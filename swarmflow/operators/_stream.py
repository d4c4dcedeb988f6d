"""An async iterator fed by background work in the run's task group.

Closing it (or leaving its `async with` block) cancels the work still in flight.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from swarmflow.core.errors import ConfigError, RunPaused
from swarmflow.runtime.context import RunContext

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream

T = TypeVar("T")
Producer = Callable[["MemoryObjectSendStream[Any]"], Awaitable[None]]


def _unwrap(exc: Exception) -> Exception:
    """What a task group's wrapping hides: its one exception, or the first of several pauses
    (a run pauses at one question at a time; resuming reaches the next)."""
    while isinstance(exc, ExceptionGroup):
        pauses = [e for e in exc.exceptions if isinstance(e, RunPaused)]
        if len(exc.exceptions) == 1 or len(pauses) == len(exc.exceptions):
            exc = exc.exceptions[0]
        else:
            break
    return exc


class BackgroundStream(Generic[T]):
    """Items produced by `producer` in the background, received in completion order."""

    def __init__(self, run: RunContext, producer: Producer, buffer: float = math.inf) -> None:
        if run.nursery is None:
            raise ConfigError("streams need a running flow")
        send, self._receive = anyio.create_memory_object_stream[T](buffer)
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._error: Exception | None = None
        run.on_close.append(self._receive.close)  # an abandoned stream is closed with the run
        run.nursery.start_soon(self._produce, producer, send)

    async def _produce(self, producer: Producer, send: MemoryObjectSendStream[Any]) -> None:
        try:
            with self._scope:
                async with send:
                    await producer(send)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the consumer went away; nothing is waiting for the rest
        except Exception as exc:  # surfaces to the consumer, not as a crash of the whole run
            self._error = _unwrap(exc)
        finally:
            self._done.set()

    def __aiter__(self) -> BackgroundStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._receive.close()
            await self._done.wait()  # the producer may still be recording why it stopped
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Cancel the work in flight and wait until it has wound down."""
        self._scope.cancel()
        self._receive.close()
        await self._done.wait()

    async def collect(self) -> list[T]:
        """Every remaining item, in completion order."""
        return [item async for item in self]

    async def __aenter__(self) -> BackgroundStream[T]:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
