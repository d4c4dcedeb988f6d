"""The budget ledger: limits, reservations before a model call, settlement after it.

A ledger has limits on tokens, USD cost, model calls and wall time. Child ledgers cover branches
and per-agent allowances; a child's spend counts against every ancestor. Reservation and
settlement are synchronous, so under cooperative concurrency each is atomic across the chain.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from swarmflow.core.errors import BudgetExhausted, ConfigError
from swarmflow.core.states import EndReason

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Limits:
    """Upper bounds; `None` means unlimited."""

    tokens: int | None = None
    cost: float | None = None
    calls: int | None = None
    seconds: float | None = None

    @classmethod
    def coerce(cls, value: Limits | Mapping[str, float | None] | None) -> Limits:
        """Accept `Limits`, a mapping such as `{"tokens": 2_000_000}`, or None; anything else,
        or an amount that is negative, NaN or of the wrong type, is a `ConfigError`."""
        if value is None:
            return cls()
        if isinstance(value, Limits):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"budget {value!r} is not a mapping such as {{'tokens': 2_000_000}} or a Limits"
            )
        unknown = set(value) - {"tokens", "cost", "calls", "seconds"}
        if unknown:
            raise ConfigError(
                f"unknown budget keys {sorted(unknown, key=str)}; use tokens, cost, calls, seconds"
            )
        return cls(
            tokens=_count(value, "tokens"),
            cost=_amount(value, "cost"),
            calls=_count(value, "calls"),
            seconds=_amount(value, "seconds"),
        )

    @classmethod
    def of_tokens(cls, tokens: int) -> Limits:
        """A token count alone (`team(limits=N)`, a `split` amount), checked as `coerce` does."""
        return cls.coerce({"tokens": tokens})


def _amount(given: Mapping[str, float | None], name: str) -> float | None:
    """`given[name]` as a limit: None (no limit), or a number of 0 or more."""
    value = given.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(f"budget {name}={value!r}: use a number of 0 or more (None: no limit)")
    return value


def _count(given: Mapping[str, float | None], name: str) -> int | None:
    """`given[name]` as a limit: None (no limit), or a whole number of 0 or more."""
    value = given.get(name)
    if value is None:
        return None
    whole = isinstance(value, int | float) and math.isfinite(value) and value == int(value)
    if isinstance(value, bool) or not whole or value < 0:
        raise ConfigError(
            f"budget {name}={value!r}: use a whole number of 0 or more (None: no limit)"
        )
    return int(value)


class Charge(NamedTuple):
    """An amount drawn from a ledger: tokens, USD and model calls."""

    tokens: int = 0
    cost: float = 0.0
    calls: int = 0


@dataclass(frozen=True, slots=True)
class BudgetSnapshot:
    """What remains, as seen from one ledger: the minimum over it and its ancestors."""

    tokens: int | None
    cost: float | None
    calls: int | None
    seconds: float | None
    spent_tokens: int
    spent_cost: float
    spent_calls: int


class Ledger:
    """One node in the ledger tree."""

    __slots__ = (
        "_clock",
        "_started",
        "limited",
        "limits",
        "name",
        "parent",
        "reserved_calls",
        "reserved_cost",
        "reserved_tokens",
        "spent_calls",
        "spent_cost",
        "spent_tokens",
    )

    def __init__(
        self,
        name: str = "run",
        limits: Limits | None = None,
        *,
        parent: Ledger | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self.limits = limits or Limits()
        lim = self.limits
        # Most ledgers (shared branches, the run without a budget) limit nothing: skip checks.
        self.limited = any(x is not None for x in (lim.tokens, lim.cost, lim.calls, lim.seconds))
        self.parent = parent
        self._clock: Clock = clock or (parent._clock if parent else time.monotonic)
        self._started = self._clock()
        self.spent_tokens = 0
        self.spent_cost = 0.0
        self.spent_calls = 0
        self.reserved_tokens = 0
        self.reserved_cost = 0.0
        self.reserved_calls = 0

    def child(self, name: str, limits: Limits | None = None) -> Ledger:
        """A ledger whose spend also counts against this one and its ancestors."""
        return Ledger(f"{self.name}/{name}", limits, parent=self)

    def chain(self) -> list[Ledger]:
        """This ledger and its ancestors, nearest first."""
        out: list[Ledger] = []
        node: Ledger | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def elapsed(self) -> float:
        return self._clock() - self._started

    def count_earlier_time(self, seconds: float) -> None:
        """Count `seconds` run before this process (a resumed run's) as already elapsed."""
        self._started -= seconds

    def snapshot(self) -> BudgetSnapshot:
        """The remaining budget, the tightest figure over the chain for each dimension."""
        chain = self.chain()
        tokens, calls = _tightest(chain, "tokens"), _tightest(chain, "calls")
        return BudgetSnapshot(
            tokens=None if tokens is None else int(tokens),
            cost=_tightest(chain, "cost"),
            calls=None if calls is None else int(calls),
            seconds=_tightest_seconds(chain),
            spent_tokens=self.spent_tokens,
            spent_cost=self.spent_cost,
            spent_calls=self.spent_calls,
        )

    def _over(self) -> str | None:
        """The first dimension whose spend already reached its limit, if any."""
        lim = self.limits
        if lim.tokens is not None and self.spent_tokens >= lim.tokens:
            return f"tokens {self.spent_tokens}/{lim.tokens}"
        if lim.cost is not None and self.spent_cost >= lim.cost:
            return f"cost ${self.spent_cost:.4f}/${lim.cost:.4f}"
        if lim.calls is not None and self.spent_calls >= lim.calls:
            return f"calls {self.spent_calls}/{lim.calls}"
        return None

    def _misfit(self, charge: Charge) -> str | None:
        """Why `charge` would not fit on top of spend and outstanding reservations."""
        lim = self.limits
        if lim.tokens is not None:
            need = self.spent_tokens + self.reserved_tokens + charge.tokens
            if need > lim.tokens:
                return f"tokens: {need} needed, limit {lim.tokens}"
        if lim.cost is not None:
            need_cost = self.spent_cost + self.reserved_cost + charge.cost
            if need_cost > lim.cost + 1e-12:
                return f"cost: ${need_cost:.4f} needed, limit ${lim.cost:.4f}"
        if lim.calls is not None:
            calls = self.spent_calls + self.reserved_calls + charge.calls
            if calls > lim.calls:
                return f"calls: {calls} needed, limit {lim.calls}"
        return None

    def _wall_clock_over(self) -> bool:
        return self.limits.seconds is not None and self.elapsed() >= self.limits.seconds

    def __repr__(self) -> str:
        return f"Ledger({self.name!r}, spent_tokens={self.spent_tokens})"


class Reservation:
    """An estimate held against a set of ledger chains until it is settled or released."""

    __slots__ = ("charge", "ledgers", "open")

    def __init__(self, ledgers: list[Ledger], charge: Charge) -> None:
        self.ledgers = ledgers
        self.charge = charge
        self.open = True

    def settle(self, actual: Charge) -> list[str]:
        """Replace the estimate by the actual charge; return the ledgers now over a limit."""
        self._close()
        over = []
        for ledger in self.ledgers:
            ledger.spent_tokens += actual.tokens
            ledger.spent_cost += actual.cost
            ledger.spent_calls += actual.calls
            if ledger.limited and _strictly_over(ledger):
                over.append(ledger.name)
        return over

    def release(self) -> None:
        """Drop the estimate without spending (the call was never answered)."""
        self._close()

    def _close(self) -> None:
        if not self.open:
            return
        self.open = False
        c = self.charge
        for ledger in self.ledgers:
            ledger.reserved_tokens -= c.tokens
            ledger.reserved_cost -= c.cost
            ledger.reserved_calls -= c.calls


def _strictly_over(ledger: Ledger) -> bool:
    lim = ledger.limits
    return (
        (lim.tokens is not None and ledger.spent_tokens > lim.tokens)
        or (lim.cost is not None and ledger.spent_cost > lim.cost + 1e-12)
        or (lim.calls is not None and ledger.spent_calls > lim.calls)
    )


def all_ledgers(heads: Iterable[Ledger]) -> list[Ledger]:
    """Every ledger on the chains of `heads`, each once, nearest first."""
    seen: dict[int, Ledger] = {}
    for head in heads:
        for ledger in head.chain():
            seen.setdefault(id(ledger), ledger)
    return list(seen.values())


def reserve_on(ledgers: list[Ledger], charge: Charge) -> Reservation:
    """Reserve `charge` against every ledger in `ledgers` (expanded by `all_ledgers`), or refuse.

    Raises:
        BudgetExhausted: with reason "budget exceeded" when a ledger had already spent its
            limit, "wall clock" when its time ran out, and "budget exhausted before model call"
            when the estimate would not fit. Nothing is reserved in that case.
    """
    for ledger in ledgers:
        _refuse_if_unfit(ledger, charge)
    for ledger in ledgers:
        ledger.reserved_tokens += charge.tokens
        ledger.reserved_cost += charge.cost
        ledger.reserved_calls += charge.calls
    return Reservation(ledgers, charge)


def _refuse_if_unfit(ledger: Ledger, charge: Charge) -> None:
    if not ledger.limited:
        return
    if ledger._wall_clock_over():
        raise BudgetExhausted(
            f"ledger {ledger.name!r} ran out of wall time ({ledger.limits.seconds}s)",
            reason=EndReason.WALL_CLOCK.value,
            ledger=ledger.name,
        )
    over = ledger._over()
    if over:
        raise BudgetExhausted(
            f"ledger {ledger.name!r} has already spent its limit ({over})",
            reason=EndReason.BUDGET_EXCEEDED.value,
            ledger=ledger.name,
        )
    misfit = ledger._misfit(charge)
    if misfit:
        raise BudgetExhausted(
            f"the next call does not fit ledger {ledger.name!r} ({misfit})",
            reason=EndReason.BUDGET_EXHAUSTED_BEFORE_CALL.value,
            ledger=ledger.name,
        )


def _tightest(chain: list[Ledger], field: str) -> int | float | None:
    best: int | float | None = None
    for ledger in chain:
        limit = getattr(ledger.limits, field)
        if limit is None:
            continue
        spent = getattr(ledger, f"spent_{field}") + getattr(ledger, f"reserved_{field}")
        left = max(limit - spent, 0)
        best = left if best is None else min(best, left)
    return best


def _tightest_seconds(chain: list[Ledger]) -> float | None:
    lefts = [
        max(ledger.limits.seconds - ledger.elapsed(), 0.0)
        for ledger in chain
        if ledger.limits.seconds is not None
    ]
    return min(lefts) if lefts else None
