"""`pipeline`: items flow stage to stage as soon as each is ready, with no barrier."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from swarmflow.core.errors import ConfigError
from swarmflow.core.ids import child_branch
from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok, Outcome
from swarmflow.operators._branches import first_escape, record, settle
from swarmflow.operators._node import closing
from swarmflow.operators._stream import BackgroundStream
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

Stage = Callable[[Any], Awaitable[Any]]
DEFAULT_LIMIT = 4


def pipeline(
    source: Iterable[Any] | AsyncIterable[Any],
    *stages: Stage,
    limit: int | Sequence[int] = DEFAULT_LIMIT,
    buffer: int | None = None,
) -> BackgroundStream[Outcome]:
    """Stream `source` through `stages`; yields one outcome per item as it completes.

    Each stage runs up to `limit` items at once (an int, or one per stage); the buffers
    between stages are bounded. A failing item becomes `Failed` and the others keep flowing.
    Source items that are already `Failed`, `Cancelled` or `Empty` pass straight through.
    Closing the iterator cancels the work in flight.
    """
    if not stages:
        raise ConfigError("pipeline() needs at least one stage")
    if not (hasattr(source, "__aiter__") or hasattr(source, "__iter__")):
        raise ConfigError(f"pipeline() needs an iterable or async iterable source, got {source!r}")
    limits = _stage_limits(limit, len(stages))
    run, parent = current_run("pipeline()"), current_scope()
    node = run.state.graph.open("pipeline", parent.branch, parent.node)
    plan = _Plan(run, Scope(parent.branch, parent.ledger, node), list(stages), limits)

    async def produce(send: MemoryObjectSendStream[Outcome]) -> None:
        with closing(run, node):
            await plan.execute(source, send)

    return BackgroundStream("pipeline()", produce, buffer=buffer or max(limits))


def _stage_limits(limit: int | Sequence[int], n: int) -> list[int]:
    limits = [limit] * n if isinstance(limit, int) else list(limit)
    if len(limits) != n or any(k < 1 for k in limits):
        raise ConfigError(f"pipeline limit must be a positive int or {n} positive ints: {limit!r}")
    return limits


@dataclass(slots=True)
class _Item:
    index: int
    value: Any


@dataclass(slots=True)
class _Plan:
    run: RunContext
    scope: Scope
    stages: list[Stage]
    limits: list[int]

    async def execute(
        self, source: Iterable[Any] | AsyncIterable[Any], out: MemoryObjectSendStream[Outcome]
    ) -> None:
        """Run the feed and every stage's workers; a mistake in a stage leaves as itself."""
        escaped: BaseException | None = None
        try:
            await self._stages(source, out)
        except BaseExceptionGroup as group:
            escaped = first_escape(group)
        if escaped is not None:
            raise escaped

    async def _stages(
        self, source: Iterable[Any] | AsyncIterable[Any], out: MemoryObjectSendStream[Outcome]
    ) -> None:
        channels = [anyio.create_memory_object_stream[Any](k) for k in self.limits]
        async with anyio.create_task_group() as tg, out:
            tg.start_soon(self._feed, source, channels[0][0].clone(), out.clone())
            for k, (_, receive) in enumerate(channels):
                nxt = channels[k + 1][0] if k + 1 < len(channels) else out
                for _ in range(self.limits[k]):
                    tg.start_soon(self._work, k, receive.clone(), nxt.clone(), out.clone(), tg)
            for send, receive in channels:
                send.close()
                receive.close()

    async def _feed(
        self, source: Any, first: MemoryObjectSendStream[Any], out: MemoryObjectSendStream[Outcome]
    ) -> None:
        async with first, out:
            position = 0
            try:
                async for value in _aiter(source):
                    await self._admit(position, value, first, out)
                    position += 1
            except Exception as exc:  # a broken source ends the feed, recorded as an outcome
                failed = Failed(exc, position, self._branch(position))
                await out.send(record(self.run, None, failed))

    async def _admit(
        self,
        position: int,
        value: Any,
        first: MemoryObjectSendStream[Any],
        out: MemoryObjectSendStream[Outcome],
    ) -> None:
        if isinstance(value, Ok):
            await first.send(_Item(value.index, value.value))
        elif isinstance(value, Failed | Cancelled | Empty):
            await out.send(value)
        else:
            await first.send(_Item(position, value))

    async def _work(
        self,
        k: int,
        receive: MemoryObjectReceiveStream[_Item],
        nxt: MemoryObjectSendStream[Any],
        out: MemoryObjectSendStream[Outcome],
        group: TaskGroup,
    ) -> None:
        last = k == len(self.stages) - 1
        async with receive, nxt, out:
            async for item in receive:
                node, outcome = await self._stage(k, item, group)
                if isinstance(outcome, Ok) and not last:
                    self.run.state.graph.close(node)
                    await nxt.send(_Item(item.index, outcome.value))
                else:
                    await out.send(record(self.run, node, outcome))

    async def _stage(self, k: int, item: _Item, group: TaskGroup) -> tuple[int, Outcome]:
        """One item through stage `k`, as a branch of its own (see `settle`)."""
        branch = self._branch(item.index)
        node = self.run.state.graph.open("stage", branch, self.scope.node, f"stage[{k}]")
        scope = Scope(branch, self.scope.ledger, node)
        stage, value = self.stages[k], item.value
        outcome = await settle(self.run, node, scope, item.index, lambda: stage(value), group=group)
        return node, outcome

    def _branch(self, index: int) -> str:
        return child_branch(self.scope.branch, "pipeline", index)


async def _aiter(source: Any) -> AsyncIterator[Any]:
    if hasattr(source, "__aiter__"):
        async for value in source:
            yield value
    else:
        for value in source:
            yield value
