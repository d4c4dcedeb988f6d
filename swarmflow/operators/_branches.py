"""Running branches: one task each, a scope and ledger each, errors kept as outcomes."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.emptiness import is_empty
from swarmflow.core.errors import BudgetExhausted, ConfigError, RunPaused, is_fault_of_the_world
from swarmflow.core.ids import child_branch
from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok, Outcome
from swarmflow.core.states import EndReason
from swarmflow.operators.budget import nothing_left
from swarmflow.record.events import BranchFinished
from swarmflow.runtime.background import BranchWork, enter_work
from swarmflow.runtime.context import RunContext, Scope, enter_scope

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

Maker = Callable[[], Awaitable[Any]]
Split = str | Limits | dict[str, float] | int | Sequence[Limits | dict[str, float] | int]
LedgerFor = Callable[[int, str], Ledger]
"""The ledger of branch `index` at `path`."""
_FOR_GOOD = frozenset(
    {
        EndReason.BUDGET_EXCEEDED.value,
        EndReason.BUDGET_EXCEEDED_AFTER_CALL.value,
        EndReason.WALL_CLOCK.value,
    }
)
"""Budget stops that last: a limit spent (not a call too large to fit), or the time up."""
START_BATCH = 16
"""Branches started before the event loop gets a turn (`BranchSet.start_all`).

Few: a batch's tasks are all made before any of them runs. The garbage collector counts
every object made and, down to zero, every one freed: a big batch sets off young collections
while it is made, and what its branches free after one counts for nothing. Started 128 at a
time, a fan-out of 10,000 instant branches made about 310 young collections and two full
ones; 16 at a time, about 170 and one, for one more turn of the event loop every 16 branches
(callgrind: about 768k instructions per branch then, 757k now)."""


@dataclass(frozen=True, slots=True)
class Branches:
    """The branches of one operator call: how many, and each one's starter, made as it starts.

    `parallel(factory, n=N)` keeps the factory, not N starters: a branch that never starts
    costs nothing. The awaitables form holds the starters it was given.
    """

    count: int
    factory: Callable[[int], Awaitable[Any]] | None = None
    given: tuple[Maker, ...] = ()

    def start(self, index: int) -> Awaitable[Any]:
        """Branch `index`'s work, made now (no starter object held while it runs)."""
        if self.factory is None:
            return self.given[index]()
        return self.factory(index)

    def close_unawaited(self) -> None:
        """Close the given awaitables, so none that never ran warns "never awaited" (closing
        one that ran to its end does nothing)."""
        for maker in self.given:
            if isinstance(maker, _Awaiting):
                maker.discard()


def branch_makers(items: tuple[Any, ...], n: int | None, operator: str) -> Branches:
    """`(factory, n=N)` or `(*awaitables)` as the branches to start.

    Raises:
        ConfigError: naming the operator and what it expected; an awaitable it was given
            but will never await is closed first, so no "never awaited" warning follows.
    """
    try:
        return _makers(items, n, operator)
    except ConfigError:
        close_unawaited(items)
        raise


def _makers(items: tuple[Any, ...], n: int | None, operator: str) -> Branches:
    if n is None:
        return Branches(len(items), given=tuple(_starter(item, operator) for item in items))
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
    return Branches(n, factory=factory)


def close_unawaited(items: tuple[object, ...]) -> None:
    """Close the coroutines among `items`: an operator refused them, so none will run."""
    for item in items:
        close = getattr(item, "close", None)
        if inspect.iscoroutine(item) and close is not None:
            close()


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


def branch_ledgers(parent: Ledger, split: Split, count: int) -> LedgerFor:
    """The ledger of each branch, made as it starts: the shared pool, an even share, or an
    explicit amount (checked now, for all `count` branches)."""
    if split == "shared":
        return lambda _index, _path: parent  # one pool: every branch draws on the parent
    if split == "even":
        share = _even_share(parent, count)
        return lambda _index, path: parent.child(path, share)
    amount = _explicit(split, count)
    return lambda index, path: parent.child(path, amount(index))


def _even_share(parent: Ledger, n: int) -> Limits:
    left = parent.snapshot()
    n = max(n, 1)
    return Limits(
        tokens=None if left.tokens is None else int(left.tokens) // n,
        cost=None if left.cost is None else left.cost / n,
        calls=None if left.calls is None else int(left.calls) // n,
    )


def _explicit(split: Split, n: int) -> Callable[[int], Limits]:
    if isinstance(split, str):
        raise ConfigError(f"split={split!r}; use 'shared', 'even' or explicit amounts")
    if isinstance(split, Limits | dict | int):
        same = _limits(split)
        return lambda _index: same
    amounts = list(split)
    if len(amounts) != n:
        raise ConfigError(f"split gives {len(amounts)} amounts for {n} branches")
    return [_limits(a) for a in amounts].__getitem__


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
    work = _entered(scope, group)
    try:
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled branch starts nothing
        value = await call()
        if work.started_any:  # streams the branch left open stop now
            await work.finish()
    except BaseException as exc:
        return await _caught(run, node, index, scope.branch, work=work, exc=exc)
    return settled(index, scope.branch, value)


def _entered(scope: Scope, group: TaskGroup) -> BranchWork:
    """Make `scope` the current task's scope, and give it its background work."""
    enter_scope(scope)
    work = BranchWork(group)
    enter_work(work)
    return work


def settled(index: int, branch: str, value: Any) -> Outcome:
    """The outcome of a branch whose work returned `value`."""
    return Empty(index, branch, value) if is_empty(value) else Ok(value, index, branch)


async def _caught(
    run: RunContext, node: int, index: int, branch: str, *, work: BranchWork, exc: BaseException
) -> Outcome:
    """How a branch whose work raised `exc` ended (`settle`): `Failed` for a fault of the
    world; a cancellation, a pause or a mistake is recorded and raised on."""
    cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
    if not cancelled and not isinstance(exc, Exception):
        raise exc  # KeyboardInterrupt and the like travel as they are
    await work.stop()
    if cancelled:
        record(run, node, Cancelled(index, branch))
        raise exc
    if isinstance(exc, RunPaused):  # a control signal, not a failure: the whole run pauses
        record(run, node, Cancelled(index, branch, "paused for a person"))
        raise exc
    if not is_fault_of_the_world(exc):  # a mistake fails the run, even inside a branch
        record(run, node, Failed(exc, index, branch))
        raise exc
    return Failed(exc, index, branch)  # errors travel as data: a failing branch is an outcome


def record(run: RunContext, node: int | None, outcome: Outcome) -> Outcome:
    """Close the outcome's graph node (if open) and record it as a `branch_finished` event."""
    kind = _KIND[type(outcome)]
    error = None
    if isinstance(outcome, Failed):
        error = f"{type(outcome.error).__name__}: {outcome.error}"
    if node is not None:
        run.state.graph.close(node, "ok" if kind in ("ok", "empty") else kind)
    fields = {"branch": outcome.branch, "outcome": kind, "error": error}
    run.deps.log.record(BranchFinished, fields)
    return outcome


@dataclass(slots=True)
class BranchSet:
    """The branches of one operator call as they run, and their outcomes by index.

    Every started branch runs in its own task of `group`. `start_all` starts them all;
    `feed` starts them in order as slots free up, so no more than `limit` of them (tasks,
    scopes, ledgers) exist at a time, and starts none once the budget has stopped them.
    """

    run: RunContext
    parent: Scope
    operator: str
    branches: Branches
    ledger_for: LedgerFor
    on_done: Callable[[Outcome], None] | None
    """Told each outcome as it is known; None when no one asks (a plain `parallel`)."""
    group: TaskGroup
    shared: bool
    """Every branch draws on the parent's ledger (`split="shared"`)."""
    results: list[Outcome | None] = field(init=False)
    started: int = 0
    """Branches 0 to `started - 1` were handed to a task."""
    stop: BudgetExhausted | None = None
    """Why the branches from `started` on do not start: the budget stopped the fan-out."""

    def __post_init__(self) -> None:
        self.results = [None] * self.branches.count

    def path(self, index: int) -> str:
        return child_branch(self.parent.branch, self.operator, index)

    async def start_all(self) -> None:
        """Start every branch, each in its own task, in order and without waiting for any:
        `START_BATCH` of them, then one turn of the event loop, in which they run up to
        their first wait, then the next ones.

        Branches that wait (on a model, a tool) are all in flight together, as if started in
        one go. Branches that finish without waiting (an instant or replayed answer) no
        longer sit as N tasks made before any of them ran: at 10,000 branches those tasks
        were most of the run's memory and of the garbage collector's work.
        """
        for index in range(self.branches.count):
            if index and not index % START_BATCH:
                await anyio.lowlevel.checkpoint()  # a cancelled fan-out starts no more
            # The task is named by the branch's path: the name anyio would make of the
            # function (its module and qualified name) costs more and says less.
            branch = self.path(index)
            self.group.start_soon(self.run_branch, index, branch, name=branch)
            self.started = index + 1

    async def feed(self, limit: int) -> None:
        """Start the branches in order, each once one of `limit` slots is free; stop starting
        them once the budget they draw on has nothing left, or stopped a branch for good."""
        slots = anyio.Semaphore(limit)
        for index in range(self.branches.count):
            try:
                slots.acquire_nowait()  # a free slot: no need to yield before starting a task
            except anyio.WouldBlock:
                await slots.acquire()
            if self.stop is None:
                self.stop = nothing_left(self.parent.ledger, partial(self._unstarted, index))
            if self.stop is not None:
                return
            self.started = index + 1
            branch = self.path(index)
            self.group.start_soon(self._run_in_slot, index, branch, slots, name=branch)

    async def _run_in_slot(self, index: int, branch: str, slots: anyio.Semaphore) -> None:
        try:
            await self.run_branch(index, branch)
        finally:
            slots.release()

    async def run_branch(self, index: int, branch: str) -> None:
        # The label is the path's last segment: the path itself at the top level.
        label = f"{self.operator}[{index}]" if self.parent.branch else branch
        node = self.run.state.graph.open("branch", branch, self.parent.node, label)
        scope = Scope(branch, self.ledger_for(index, branch), node)
        # `settle` written out here, not awaited: one frame fewer held by every branch in
        # flight (a fan-out may hold tens of thousands).
        work = _entered(scope, self.group)
        try:
            try:
                await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled branch starts nothing
                value = await self.branches.start(index)
                if work.started_any:  # streams the branch left open stop now
                    await work.finish()
            except BaseException as exc:
                outcome = await _caught(self.run, node, index, branch, work=work, exc=exc)
            else:
                outcome = settled(index, branch, value)
        except BaseException:  # cancelled, or the call raises: `_caught` recorded how it ended
            self.results[index] = Cancelled(index, branch)
            raise
        if isinstance(outcome, Failed) and self.stop is None and self.shared:
            self.stop = self._stopped_by(outcome)
        self.results[index] = record(self.run, node, outcome)
        if self.on_done is not None:
            self.on_done(outcome)

    def _stopped_by(self, outcome: Failed) -> BudgetExhausted | None:
        """A branch stopped by the shared budget for good: the branches after it would be."""
        error = outcome.error
        if not isinstance(error, BudgetExhausted) or error.reason not in _FOR_GOOD:
            return None
        after = self._unstarted(outcome.index + 1)
        return BudgetExhausted(
            f"{after}: {outcome.branch} was stopped by the budget ({error})",
            reason=error.reason,
            ledger=error.ledger,
        )

    def _unstarted(self, index: int) -> str:
        return f"{self.path(index)} and the branches after it were not started"

    def finish(self, *, returning: bool) -> list[Outcome]:
        """Fill in the branches with no outcome and return every outcome.

        A branch handed to a task that was cancelled before it began is `Cancelled`, and
        recorded. The branches never started are filled in only when the call returns:
        `Failed` with the budget's stop, or `Cancelled` after an early stop (`first=`); they
        have no event of their own, as they never ran (there may be a million of them).
        """
        for index in range(self.started):
            if self.results[index] is None:
                cancelled = Cancelled(index, self.path(index), "cancelled before it started")
                self._fill(record(self.run, None, cancelled))
        if returning:
            for index in range(self.started, self.branches.count):
                self._fill(self._never_started(index))
        return self.results  # type: ignore[return-value]  # filled, when it is returned

    def _never_started(self, index: int) -> Outcome:
        if self.stop is not None:
            return Failed(self.stop, index, self.path(index))
        return Cancelled(index, self.path(index), "cancelled before it started")

    def _fill(self, outcome: Outcome) -> None:
        self.results[outcome.index] = outcome
        if self.on_done is not None:
            self.on_done(outcome)


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
