"""`parallel`: fan out branches with bounded concurrency and typed outcomes.

Without `limit=` every branch starts at once; with it, branches start in order as slots free
up, so what a fan-out holds while it runs is bounded by `limit` (and its outcomes), however
many branches it has.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from swarmflow.core.errors import ConfigError
from swarmflow.core.outcomes import Ok, Outcome
from swarmflow.operators._branches import (
    Branches,
    BranchSet,
    Split,
    branch_ledgers,
    branch_makers,
    close_unawaited,
    first_escape,
)
from swarmflow.operators._node import closing, operator_node
from swarmflow.operators._stream import BackgroundStream
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectSendStream

MAX_AT_ONCE = 100_000
"""The most branches one call without `limit=` runs: they all start at once."""
MAX_BRANCHES = 1_000_000
"""The most branches one call runs with `limit=`: their outcomes come back as one list."""


def check_count(
    count: int, limit: int | None, operator: str = "parallel", *, option: str = "limit="
) -> None:
    """Refuse a fan-out wider than one call runs: `MAX_AT_ONCE` without `limit=`, else
    `MAX_BRANCHES`.

    Raises:
        ConfigError: naming the count, the maximum and what to do instead (`option`, the
            limit option as the caller writes it).
    """
    if limit is None and count > MAX_AT_ONCE:
        raise ConfigError(
            f"{operator}: {count:,} branches would all start at once, and at most "
            f"{MAX_AT_ONCE:,} may; give {option} to start them as slots free up",
            operator=operator,
        )
    if count > MAX_BRANCHES:
        raise ConfigError(
            f"{operator}: {count:,} branches is more than the {MAX_BRANCHES:,} one call runs "
            "(its outcomes come back as one list); split the work over several calls, or "
            "stream it through pipeline()",
            operator=operator,
        )


def _branches(
    items: tuple[Any, ...], n: int | None, limit: int | None, first: int | None, operator: str
) -> Branches:
    try:
        _check_limits(limit, first)
    except ConfigError:
        close_unawaited(items)
        raise
    branches = branch_makers(items, n, operator)
    try:
        check_count(branches.count, limit, operator)
    except ConfigError:
        branches.close_unawaited()
        raise
    return branches


def _check_limits(limit: int | None, first: int | None) -> None:
    if limit is not None and limit < 1:
        raise ConfigError(f"parallel(limit={limit}): at least one branch must be able to run")
    if first is not None and first < 1:
        raise ConfigError(f"parallel(first={first}): first= counts successes, so it must be >= 1")


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
        `first=k`, the call returns after k successes and the rest are `Cancelled`. With
        `limit=`, no branch starts once the budget has stopped the fan-out: those left are
        `Failed` with that `BudgetExhausted`.
        """
        branches = _branches(items, n, limit, first, "parallel")
        detail = {"branches": branches.count, "limit": limit, "split": str(split), "first": first}
        with operator_node("parallel", detail=detail) as (run, scope):
            return await _run_all(
                run, scope=scope, branches=branches, limit=limit, split=split, first=first
            )

    def stream(
        self,
        *items: Any,
        n: int | None = None,
        limit: int | None = None,
        split: Split = "shared",
    ) -> BackgroundStream[Outcome]:
        """The streaming form: an async iterator of outcomes in completion order.

        The branches start at once (with `limit=`, as slots free up). Closing the iterator
        cancels those still running.
        """
        branches = _branches(items, n, limit, None, "parallel.stream")
        run, parent = current_run("parallel.stream()"), current_scope()
        node = run.state.graph.open("parallel.stream", parent.branch, parent.node)
        scope = Scope(parent.branch, parent.ledger, node)

        async def produce(send: MemoryObjectSendStream[Outcome]) -> None:
            with closing(run, node):
                deliver = _sender(send)
                await _fan_out(
                    run,
                    scope,
                    branches=branches,
                    limit=limit,
                    split=split,
                    done=lambda outcome, _group: deliver(outcome),
                )

        return BackgroundStream("parallel.stream()", produce)


async def _run_all(
    run: RunContext,
    *,
    scope: Scope,
    branches: Branches,
    limit: int | None,
    split: Split,
    first: int | None,
) -> list[Outcome]:
    if first is None:  # nothing to count
        return await _fan_out(run, scope, branches=branches, limit=limit, split=split)
    successes = 0

    def done(outcome: Outcome, group: TaskGroup) -> None:
        nonlocal successes
        if isinstance(outcome, Ok):
            successes += 1
            if successes >= first:
                group.cancel_scope.cancel()  # early stop: the branches still running end

    return await _fan_out(run, scope, branches=branches, limit=limit, split=split, done=done)


async def _fan_out(
    run: RunContext,
    scope: Scope,
    *,
    branches: Branches,
    limit: int | None,
    split: Split,
    done: Callable[[Outcome, TaskGroup], None] | None = None,
) -> list[Outcome]:
    """Run the branches in one anyio task group; a branch's mistake leaves as itself.
    `done` is told each outcome as it is known, with the group."""
    fan: BranchSet | None = None
    escaped: BaseException | None = None
    returning = False
    try:
        ledger_for = branch_ledgers(scope.ledger, split, branches.count)
        async with anyio.create_task_group() as tg:
            fan = BranchSet(
                run,
                scope,
                "parallel",
                branches,
                ledger_for,
                None if done is None else lambda o: done(o, tg),
                tg,
                shared=split == "shared",
            )
            if limit is None:
                await fan.start_all()
            else:
                await fan.feed(limit)
        returning = True
    except BaseExceptionGroup as group:
        escaped = first_escape(group)
    finally:
        outcomes = fan.finish(returning=returning) if fan is not None else []
        branches.close_unawaited()
    if escaped is not None:
        raise escaped
    return outcomes


def _sender(send: MemoryObjectSendStream[Outcome]) -> Callable[[Outcome], None]:
    def deliver(outcome: Outcome) -> None:
        # A closed consumer is fine: the outcome is still in the event log.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(outcome)

    return deliver


parallel = _Parallel()
