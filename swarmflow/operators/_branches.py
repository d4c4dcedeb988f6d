"""Running branches: one task each, a scope and ledger each, errors kept as outcomes."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.emptiness import is_empty
from swarmflow.core.errors import ConfigError, RunPaused, is_fault_of_the_world
from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok, Outcome
from swarmflow.record.events import BranchFinished
from swarmflow.runtime.background import BranchWork, enter_work
from swarmflow.runtime.context import RunContext, Scope, enter_scope

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

Maker = Callable[[], Awaitable[Any]]
Split = str | Limits | dict[str, float] | int | Sequence[Limits | dict[str, float] | int]


def branch_makers(items: tuple[Any, ...], n: int | None, operator: str) -> list[Maker]:
    """`(factory, n=N)` or `(*awaitables)` as a list of zero-argument branch starters.

    Raises:
        ConfigError: naming the operator and what it expected; an awaitable it was given
            but will never await is closed first, so no "never awaited" warning follows.
    """
    try:
        return _makers(items, n, operator)
    except ConfigError:
        for item in items:
            _close_unawaited(item)
        raise


def _makers(items: tuple[Any, ...], n: int | None, operator: str) -> list[Maker]:
    if n is None:
        return [_starter(item, operator) for item in items]
    if len(items) != 1:
        raise ConfigError(
            f"{operator}(factory, n={n}) takes exactly one factory, got {len(items)} arguments",
            operator=operator,
        )
    factory = items[0]
    if inspect.isawaitable(factory):
        raise ConfigError(
            f"{operator}(..., n={n}) expected a factory (a function of the branch index, such "
            f"as `lambda i: agent(...)`) but was given a {type(factory).__name__} object, "
            "which runs only once; pass the function instead",
            operator=operator,
        )
    if not callable(factory):
        raise ConfigError(
            f"{operator}(factory, n={n}) expected a callable factory, got {factory!r:.80}",
            operator=operator,
        )
    if not isinstance(n, int) or n < 0:
        raise ConfigError(f"{operator}: n must be an int >= 0, got {n!r}", operator=operator)
    return [_bind(factory, i) for i in range(n)]


def _close_unawaited(item: Any) -> None:
    close = getattr(item, "close", None)
    if inspect.iscoroutine(item) and close is not None:
        close()


def _bind(factory: Callable[[int], Awaitable[Any]], i: int) -> Maker:
    return partial(factory, i)  # smaller than a closure: one per branch in flight


def _starter(item: Any, operator: str) -> Maker:
    if callable(item) and not hasattr(item, "__await__"):
        return item  # type: ignore[no-any-return]
    if not hasattr(item, "__await__"):
        raise ConfigError(
            f"{operator}() expected awaitables (such as `agent(...)` calls) or a factory "
            f"with n=, got {item!r:.80}",
            operator=operator,
        )
    return _Awaiting(item)


class _Awaiting:
    """A branch given as an awaitable; closed unawaited if the branch never starts."""

    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item

    async def __call__(self) -> Any:
        return await self.item

    def discard(self) -> None:
        close = getattr(self.item, "close", None)
        if close is not None:
            close()


def discard_unstarted(
    run: RunContext, makers: Sequence[Maker], paths: Sequence[str], results: list[Any]
) -> list[Any]:
    """Fill in branches cancelled before they started: record them and close their awaitables."""
    out = []
    for i, result in enumerate(results):
        if result is not None:
            out.append(result)
            continue
        maker = makers[i]
        if isinstance(maker, _Awaiting):
            maker.discard()
        out.append(Cancelled(i, paths[i], "cancelled before it started"))
        run.deps.log.emit(BranchFinished, branch=paths[i], outcome="cancelled", error=None)
    return out


def branch_ledgers(parent: Ledger, branches: Sequence[str], split: Split) -> list[Ledger]:
    """One child ledger per branch: shared pool, even shares, or explicit amounts."""
    if split == "shared":
        return [parent] * len(branches)  # one pool: every branch draws on the parent directly
    if split == "even":
        share = _even_share(parent, len(branches))
        return [parent.child(b, share) for b in branches]
    amounts = _explicit(split, len(branches))
    return [parent.child(b, limits) for b, limits in zip(branches, amounts, strict=True)]


def _even_share(parent: Ledger, n: int) -> Limits:
    left = parent.snapshot()
    n = max(n, 1)
    return Limits(
        tokens=None if left.tokens is None else int(left.tokens) // n,
        cost=None if left.cost is None else left.cost / n,
        calls=None if left.calls is None else int(left.calls) // n,
    )


def _explicit(split: Split, n: int) -> list[Limits]:
    if isinstance(split, str):
        raise ConfigError(f"split={split!r}; use 'shared', 'even' or explicit amounts")
    if isinstance(split, Limits | dict | int):
        return [_limits(split)] * n
    amounts = list(split)
    if len(amounts) != n:
        raise ConfigError(f"split gives {len(amounts)} amounts for {n} branches")
    return [_limits(a) for a in amounts]


def _limits(amount: Limits | dict[str, float] | int) -> Limits:
    return Limits.of_tokens(amount) if isinstance(amount, int) else Limits.coerce(amount)


async def settle(
    run: RunContext, node: int, scope: Scope, index: int, call: Maker, *, group: TaskGroup
) -> Outcome:
    """Run one branch's work (`call()`) in `scope` and say how it ended, as an outcome.

    Streams the branch opens run in `group` (the one running the branch) and are stopped
    before this returns or raises.
    A fault of the world becomes `Failed`; a mistake in the flow, a pause for a person and a
    cancellation are recorded and raised on: they are not this branch's result.
    """
    enter_scope(scope)
    branch = scope.branch
    work = BranchWork(group)
    enter_work(work)
    try:
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled branch starts nothing
        value = await call()
        await work.finish()  # streams the branch left open stop now
    except anyio.get_cancelled_exc_class():
        await work.stop()
        record(run, node, Cancelled(index, branch))
        raise
    except RunPaused:  # a control signal, not a failure: the whole run pauses
        await work.stop()
        record(run, node, Cancelled(index, branch, "paused for a person"))
        raise
    except Exception as exc:
        await work.stop()
        if not is_fault_of_the_world(exc):  # a mistake fails the run, even inside a branch
            record(run, node, Failed(exc, index, branch))
            raise
        return Failed(exc, index, branch)  # errors travel as data: a failing branch is an outcome
    return Empty(index, branch, value) if is_empty(value) else Ok(value, index, branch)


def record(run: RunContext, node: int | None, outcome: Outcome) -> Outcome:
    """Close the outcome's graph node (if open) and record it as a `branch_finished` event."""
    kind = _KIND[type(outcome)]
    error = None
    if isinstance(outcome, Failed):
        error = f"{type(outcome.error).__name__}: {outcome.error}"
    if node is not None:
        run.state.graph.close(node, "ok" if kind in ("ok", "empty") else kind)
    run.deps.log.emit(BranchFinished, branch=outcome.branch, outcome=kind, error=error)
    return outcome


@dataclass(slots=True)
class BranchSet:
    """What the branches of one operator call share."""

    run: RunContext
    parent: Scope
    operator: str
    limiter: anyio.CapacityLimiter | None
    on_done: Callable[[Outcome], None]
    group: TaskGroup

    async def run_branch(self, i: int, branch: str, ledger: Ledger, make: Maker) -> None:
        node = self.run.state.graph.open(
            "branch", branch, self.parent.node, f"{self.operator}[{i}]"
        )
        scope = Scope(branch, ledger, node)
        if self.limiter is None:
            outcome = await settle(self.run, node, scope, i, make, group=self.group)
        else:
            async with self.limiter:
                outcome = await settle(self.run, node, scope, i, make, group=self.group)
        self.on_done(record(self.run, node, outcome))


def first_escape(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error that left a group of branches: a mistake before a pause (one at a time)."""
    leaves = list(_leaves(group))
    for leaf in leaves:
        if not isinstance(leaf, Exception):
            return group  # KeyboardInterrupt and the like travel as they are
    mistakes = [leaf for leaf in leaves if not isinstance(leaf, RunPaused)]
    return (mistakes or leaves)[0]


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


_KIND: dict[type, Any] = {Ok: "ok", Failed: "failed", Cancelled: "cancelled", Empty: "empty"}
