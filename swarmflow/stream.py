"""`swarmflow.stream`: a run's events as they happen, for apps that show progress.

    async with swarmflow.stream(fix, task="...", model=...) as events:
        async for item in events:
            ...                     # an event (RunStarted, ModelCalled, ...) or a TextDelta
    print(events.result.status)

Every event of the run arrives in order, typed (the models of `swarmflow.record.events`),
ending with `run_finished`; `TextDelta`s carry model text as it streams in when the model
streams (`OpenAIModel(..., stream=True)`). Leaving the `async with` block early cancels the
run. A plain `async for item in swarmflow.stream(...)` works too when it is read to the end.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from swarmflow.core.errors import ConfigError, FlowFailed
from swarmflow.record.events import EventBase
from swarmflow.runner.lifecycle import RunResult, run
from swarmflow.runner.live import TextDelta, delta_listener
from swarmflow.runtime.flow import Flow

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectSendStream

StreamItem = EventBase | TextDelta
"""What `stream` yields: an event of the run, or a piece of streamed model text."""


class _ForwardSink:
    """An event sink that forwards every event into the stream."""

    def __init__(self, send: MemoryObjectSendStream[StreamItem]) -> None:
        self._send = send

    def write(self, event: EventBase | None, line: bytes) -> None:
        if event is not None:
            self.forward(event)

    def forward(self, item: StreamItem) -> None:
        # The buffer is unbounded, so the run never waits on its reader; a reader that went
        # away is cancelling the run with it.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(item)

    def close(self) -> None:
        """The run closes its sinks when it ends; the stream ends when `run` returns."""


class RunStream:
    """The events of one run, as they happen. See the module docstring."""

    def __init__(self, flow: Flow[..., object], kwargs: dict[str, Any]) -> None:
        if not isinstance(flow, Flow):
            raise ConfigError(f"stream() needs a @flow, got {flow!r}")
        self._flow = flow
        self._kwargs = kwargs
        self._send, self._receive = anyio.create_memory_object_stream[StreamItem](math.inf)
        self._group: TaskGroup | None = None
        self._error: BaseException | None = None
        self.result: RunResult | None = None
        """The run's result, once its last event has been read."""

    async def __aenter__(self) -> RunStream:
        if self._group is not None:
            raise ConfigError("a stream runs its flow once; call swarmflow.stream() again")
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._run)
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._group is not None
        self._group.cancel_scope.cancel()  # a run still going when the reader leaves stops
        self._receive.close()
        try:
            return await self._group.__aexit__(et, e, tb)
        except BaseExceptionGroup as group:
            if e is not None and len(group.exceptions) == 1 and group.exceptions[0] is e:
                return False  # the reader's own exception, raised as itself, not in a group
            raise

    async def _run(self) -> None:
        sink = _ForwardSink(self._send)
        kwargs = dict(self._kwargs)
        kwargs["sinks"] = [*kwargs.get("sinks", ()), sink]
        token = delta_listener.set(sink.forward)
        try:
            async with self._send:
                self.result = await run(self._flow, **kwargs)
        except FlowFailed as exc:  # raised to the reader after the events, as run() raises it
            self.result, self._error = exc.result, exc
        except Exception as exc:  # bad arguments, say: raised to the reader after the events
            self._error = exc
        finally:
            delta_listener.reset(token)

    def __aiter__(self) -> AsyncIterator[StreamItem]:
        return self if self._group is not None else self._read_all()

    async def __anext__(self) -> StreamItem:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None

    async def _read_all(self) -> AsyncIterator[StreamItem]:
        async with self:
            async for item in self:
                yield item


def stream(flow: Flow[..., object], /, **kwargs: Any) -> RunStream:
    """Run `flow` like `swarmflow.run(flow, **kwargs)`, yielding its events as they happen."""
    return RunStream(flow, kwargs)


__all__ = ["RunStream", "StreamItem", "TextDelta", "stream"]
