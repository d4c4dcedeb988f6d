"""`parallel`: fan out branches with bounded concurrency and typed outcomes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from swarmflow.core.errors import ConfigError
from swarmflow.core.ids import child_branch
from swarmflow.core.outcomes import Ok, Outcome
from swarmflow.operators._branches import (
    BranchSet,
    Maker,
    Split,
    branch_ledgers,
    branch_makers,
    discard_unstarted,
    first_escape,
)
from swarmflow.operators._node import operator_node
from swarmflow.operators._stream import BackgroundStream
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectSendStream


def _check_options(items: tuple[Any, ...], limit: int | None, first: int | None) -> None:
    try:
        _check_limits(limit, first)
    except ConfigError:
        branch_makers(items, None, "parallel")  # closes the awaitables it will never run
        raise


def _check_limits(limit: int | None, first: int | None) -> None:
    if limit is not None and limit < 1:
        raise ConfigError(f"parallel(limit={limit}): at least one branch must be able to run")
    if first is not None and first < 1:
        raise ConfigError(f"parallel(first={first}): first= counts successes, so it must be >= 1")


def _limiter(limit: int | None) -> anyio.CapacityLimiter | None:
    return None if limit is None else anyio.CapacityLimiter(limit)


class _Parallel:
    """Fan out N branches: `parallel(factory, n=N)` or `parallel(*awaitables)`."""

    async def __call__(
        self,
        *items: Any,
        n: int | None = None,
        limit: int | None = None,
        split: Split = "shared",
        first: int | None = None,
    ) -> list[Outcome]:
        """Run every branch; outcomes come back in submission order.

        A failing branch is a `Failed` outcome and never cancels its siblings. With
        `first=k`, the call returns after k successes and the rest are `Cancelled`.
        """
        _check_options(items, limit, first)
        makers = branch_makers(items, n, "parallel")
        detail = {"branches": len(makers), "limit": limit, "split": str(split), "first": first}
        with operator_node("parallel", detail=detail) as (run, scope):
            return await _run_all(
                run, scope=scope, makers=makers, limit=limit, split=split, first=first
            )

    def stream(
        self,
        *items: Any,
        n: int | None = None,
        limit: int | None = None,
        split: Split = "shared",
    ) -> BackgroundStream[Outcome]:
        """The streaming form: an async iterator of outcomes in completion order.

        The branches start at once. Closing the iterator cancels those still running.
        """
        _check_options(items, limit, None)
        makers = branch_makers(items, n, "parallel.stream")
        run, parent = current_run("parallel.stream()"), current_scope()
        node = run.state.graph.open("parallel.stream", parent.branch, parent.node)
        scope = Scope(parent.branch, parent.ledger, node)

        async def produce(send: MemoryObjectSendStream[Outcome]) -> None:
            status = "failed"
            try:
                await _run_into(
                    run, scope=scope, makers=makers, limit=limit, split=split, send=send
                )
                status = "ok"
            except anyio.get_cancelled_exc_class():
                status = "cancelled"
                raise
            finally:
                run.state.graph.close(node, status)

        return BackgroundStream("parallel.stream()", produce)


async def _run_all(
    run: RunContext,
    *,
    scope: Scope,
    makers: Sequence[Maker],
    limit: int | None,
    split: Split,
    first: int | None,
) -> list[Outcome]:
    results: list[Outcome | None] = [None] * len(makers)
    successes = 0

    def done(outcome: Outcome, group: TaskGroup) -> None:
        nonlocal successes
        results[outcome.index] = outcome
        if isinstance(outcome, Ok):
            successes += 1
            if first is not None and successes >= first:
                group.cancel_scope.cancel()  # early stop: the branches still running end

    await _fan_out(run, scope, makers=makers, limit=limit, split=split, done=done, results=results)
    return results  # type: ignore[return-value]  # every slot is filled by now


async def _run_into(
    run: RunContext,
    *,
    scope: Scope,
    makers: Sequence[Maker],
    limit: int | None,
    split: Split,
    send: MemoryObjectSendStream[Outcome],
) -> None:
    delivered: list[Outcome | None] = [None] * len(makers)
    deliver = _sender(send)

    def done(outcome: Outcome, group: TaskGroup) -> None:
        delivered[outcome.index] = outcome
        deliver(outcome)

    await _fan_out(
        run, scope, makers=makers, limit=limit, split=split, done=done, results=delivered
    )


async def _fan_out(
    run: RunContext,
    scope: Scope,
    *,
    makers: Sequence[Maker],
    limit: int | None,
    split: Split,
    done: Callable[[Outcome, TaskGroup], None],
    results: list[Outcome | None],
) -> None:
    """Run every branch in one anyio task group; a branch's mistake leaves as itself."""
    paths = [child_branch(scope.branch, "parallel", i) for i in range(len(makers))]
    escaped: BaseException | None = None
    try:
        ledgers = branch_ledgers(scope.ledger, paths, split)
        async with anyio.create_task_group() as tg:
            branches = BranchSet(run, scope, "parallel", _limiter(limit), lambda o: done(o, tg), tg)
            for i, make in enumerate(makers):
                tg.start_soon(branches.run_branch, i, paths[i], ledgers[i], make)
    except BaseExceptionGroup as group:
        escaped = first_escape(group)
    finally:
        filled = discard_unstarted(run, makers, paths, results)
        results[:] = filled
    if escaped is not None:
        raise escaped


def _sender(send: MemoryObjectSendStream[Outcome]) -> Callable[[Outcome], None]:
    def deliver(outcome: Outcome) -> None:
        # A closed consumer is fine: the outcome is still in the event log.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(outcome)

    return deliver


parallel = _Parallel()
