"""Running branches: one task each, a scope and ledger each, errors kept as outcomes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.emptiness import is_empty
from swarmflow.core.errors import ConfigError, RunPaused
from swarmflow.core.events import BranchFinished
from swarmflow.core.ids import child_branch
from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok, Outcome
from swarmflow.runtime.context import RunContext, Scope, enter_scope

Maker = Callable[[], Awaitable[Any]]
Split = str | Limits | dict[str, float] | int | Sequence[Limits | dict[str, float] | int]


def branch_makers(items: tuple[Any, ...], n: int | None, operator: str) -> list[Maker]:
    """`(factory, n=N)` or `(*awaitables)` as a list of zero-argument branch starters."""
    if n is not None:
        if len(items) != 1 or not callable(items[0]):
            raise ConfigError(f"{operator}(factory, n=N) takes exactly one factory callable")
        if n < 0:
            raise ConfigError(f"{operator}: n must be >= 0, got {n}")
        factory = items[0]
        return [_bind(factory, i) for i in range(n)]
    return [_starter(item, operator) for item in items]


def _bind(factory: Callable[[int], Awaitable[Any]], i: int) -> Maker:
    return lambda: factory(i)


def _starter(item: Any, operator: str) -> Maker:
    if callable(item) and not hasattr(item, "__await__"):
        return item  # type: ignore[no-any-return]
    if not hasattr(item, "__await__"):
        raise ConfigError(f"{operator}() takes awaitables or a factory with n=, got {item!r}")
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
        run.log.emit(BranchFinished, branch=paths[i], outcome="cancelled", error=None)
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
    return Limits(tokens=amount) if isinstance(amount, int) else Limits.coerce(amount)


@dataclass(slots=True)
class BranchSet:
    """What the branches of one operator call share."""

    run: RunContext
    parent: Scope
    operator: str
    limiter: anyio.CapacityLimiter | None
    on_done: Callable[[Outcome], None]

    def paths(self, n: int) -> list[str]:
        return [child_branch(self.parent.branch, self.operator, i) for i in range(n)]

    async def run_branch(self, i: int, branch: str, ledger: Ledger, make: Maker) -> None:
        node = self.run.graph.open("branch", branch, self.parent.node, f"{self.operator}[{i}]")
        enter_scope(Scope(branch, ledger, node))
        outcome: Outcome
        try:
            if self.limiter is None:
                value = await make()
            else:
                async with self.limiter:
                    value = await make()
        except anyio.get_cancelled_exc_class():
            self._finish(node, Cancelled(i, branch))
            raise
        except RunPaused:  # a control signal, not a failure: the whole run pauses
            self._finish(node, Cancelled(i, branch, "paused for a person"))
            raise
        except Exception as exc:  # errors travel as data: a failing branch is an outcome
            outcome = Failed(exc, i, branch)
        else:
            outcome = Empty(i, branch, value) if is_empty(value) else Ok(value, i, branch)
        self._finish(node, outcome)

    def _finish(self, node: int, outcome: Outcome) -> None:
        kind = _KIND[type(outcome)]
        error = None
        if isinstance(outcome, Failed):
            error = f"{type(outcome.error).__name__}: {outcome.error}"
        self.run.graph.close(node, "ok" if kind in ("ok", "empty") else kind)
        self.run.log.emit(BranchFinished, branch=outcome.branch, outcome=kind, error=error)
        self.on_done(outcome)


_KIND: dict[type, Any] = {Ok: "ok", Failed: "failed", Cancelled: "cancelled", Empty: "empty"}
