"""`pipeline`: items flow stage to stage as soon as each is ready, with no barrier."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from swarmflow.core.emptiness import is_empty
from swarmflow.core.errors import ConfigError, RunPaused
from swarmflow.core.events import BranchFinished
from swarmflow.core.ids import child_branch
from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok, Outcome
from swarmflow.operators._stream import BackgroundStream
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope, enter_scope

if TYPE_CHECKING:
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
    node = run.graph.open("pipeline", parent.branch, parent.node)
    plan = _Plan(run, Scope(parent.branch, parent.ledger, node), list(stages), limits)

    async def produce(send: MemoryObjectSendStream[Outcome]) -> None:
        await plan.execute(source, send)
        run.graph.close(node)

    return BackgroundStream(run, produce, buffer=buffer or max(limits))


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
        channels = [anyio.create_memory_object_stream[Any](k) for k in self.limits]
        async with anyio.create_task_group() as tg, out:
            tg.start_soon(self._feed, source, channels[0][0].clone(), out.clone())
            for k, (_, receive) in enumerate(channels):
                nxt = channels[k + 1][0] if k + 1 < len(channels) else out
                for _ in range(self.limits[k]):
                    tg.start_soon(self._work, k, receive.clone(), nxt.clone(), out.clone())
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
                await out.send(self._record(Failed(exc, position, self._branch(position))))

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
    ) -> None:
        last = k == len(self.stages) - 1
        async with receive, nxt, out:
            async for item in receive:
                outcome = await self._stage(k, item)
                if isinstance(outcome, Ok) and not last:
                    await nxt.send(_Item(item.index, outcome.value))
                else:
                    await out.send(self._record(outcome))

    async def _stage(self, k: int, item: _Item) -> Outcome:
        branch = self._branch(item.index)
        node = self.run.graph.open("stage", branch, self.scope.node, f"stage[{k}]")
        enter_scope(Scope(branch, self.scope.ledger, node))
        try:
            value = await self.stages[k](item.value)
        except anyio.get_cancelled_exc_class():
            self.run.graph.close(node, "cancelled")
            self._record(Cancelled(item.index, branch))
            raise
        except RunPaused:  # a control signal, not a failure: the whole run pauses
            self.run.graph.close(node, "cancelled")
            self._record(Cancelled(item.index, branch, "paused for a person"))
            raise
        except Exception as exc:  # per-item failure: the other items keep flowing
            self.run.graph.close(node, "failed")
            return Failed(exc, item.index, branch)
        self.run.graph.close(node)
        return (
            Empty(item.index, branch, value) if is_empty(value) else Ok(value, item.index, branch)
        )

    def _branch(self, index: int) -> str:
        return child_branch(self.scope.branch, "pipeline", index)

    def _record(self, outcome: Outcome) -> Outcome:
        kind = {Ok: "ok", Failed: "failed", Cancelled: "cancelled", Empty: "empty"}[type(outcome)]
        error = (
            f"{type(outcome.error).__name__}: {outcome.error}"
            if isinstance(outcome, Failed)
            else None
        )
        self.run.log.emit(BranchFinished, branch=outcome.branch, outcome=kind, error=error)
        return outcome


async def _aiter(source: Any) -> AsyncIterator[Any]:
    if hasattr(source, "__aiter__"):
        async for value in source:
            yield value
    else:
        for value in source:
            yield value
