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
)
from swarmflow.operators._node import operator_node
from swarmflow.operators._stream import BackgroundStream
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope
from swarmflow.runtime.taskgroup import branch_group

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream


def _check_options(limit: int | None, first: int | None) -> None:
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
        makers = branch_makers(items, n, "parallel")
        _check_options(limit, first)
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
        makers = branch_makers(items, n, "parallel.stream")
        _check_options(limit, None)
        run, parent = current_run("parallel.stream()"), current_scope()
        node = run.graph.open("parallel.stream", parent.branch, parent.node)
        scope = Scope(parent.branch, parent.ledger, node)

        async def produce(send: MemoryObjectSendStream[Outcome]) -> None:
            await _run_into(run, scope=scope, makers=makers, limit=limit, split=split, send=send)
            run.graph.close(node)

        return BackgroundStream(run, produce)


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
    paths = [child_branch(scope.branch, "parallel", i) for i in range(len(makers))]
    ledgers = branch_ledgers(scope.ledger, paths, split)
    async with branch_group() as tg:
        successes = 0

        def done(outcome: Outcome) -> None:
            nonlocal successes
            results[outcome.index] = outcome
            if isinstance(outcome, Ok):
                successes += 1
                if first is not None and successes >= first:
                    tg.cancel()

        branches = BranchSet(run, scope, "parallel", _limiter(limit), done)
        for i, make in enumerate(makers):
            tg.start_soon(branches.run_branch, i, paths[i], ledgers[i], make)
    return discard_unstarted(run, makers, paths, results)


async def _run_into(
    run: RunContext,
    *,
    scope: Scope,
    makers: Sequence[Maker],
    limit: int | None,
    split: Split,
    send: MemoryObjectSendStream[Outcome],
) -> None:
    paths = [child_branch(scope.branch, "parallel", i) for i in range(len(makers))]
    ledgers = branch_ledgers(scope.ledger, paths, split)
    delivered: list[Outcome | None] = [None] * len(makers)
    deliver = _sender(send)

    def done(outcome: Outcome) -> None:
        delivered[outcome.index] = outcome
        deliver(outcome)

    try:
        async with branch_group() as tg:
            branches = BranchSet(run, scope, "parallel", _limiter(limit), done)
            for i, make in enumerate(makers):
                tg.start_soon(branches.run_branch, i, paths[i], ledgers[i], make)
    finally:
        discard_unstarted(run, makers, paths, delivered)


def _sender(send: MemoryObjectSendStream[Outcome]) -> Callable[[Outcome], None]:
    def deliver(outcome: Outcome) -> None:
        # A closed consumer is fine: the outcome is still in the event log.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(outcome)

    return deliver


parallel = _Parallel()
