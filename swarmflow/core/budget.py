"""The budget ledger: limits, reservations before a model call, settlement after it.

A ledger has limits on tokens, USD cost, model calls and wall time. Child ledgers cover branches
and per-agent allowances; a child's spend counts against every ancestor. Reservation and
settlement are synchronous, so under cooperative concurrency each is atomic across the chain.

A model call reserves what it is expected to use, its prompt estimate plus the output its agent
is expected to write (`reserve_call`), and is capped (its `max_tokens`) to what the ledgers have
left after every outstanding reservation. The overshoot bound: spend past a ledger's limit is at
most the sum, over the calls in flight when the last reservation was admitted, of how far each
call's real usage exceeded its reservation; and that excess is at most the call's prompt
estimate error plus its cap less its reserved output, where the cap never exceeds what no other
call held when it was admitted. A call alone in flight thus overshoots only by its prompt
estimate's error, whatever it writes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import NamedTuple

from swarmflow.core.errors import BudgetExhausted, ConfigError
from swarmflow.core.pricing import FREE, Price
from swarmflow.core.states import EndReason
from swarmflow.core.tokens import EXPECTED_OUTPUT_FLOOR

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

    def over(self, base: Limits) -> Limits:
        """These limits, with `base`'s in place of each one these leave unset (None)."""
        return Limits(
            tokens=self.tokens if self.tokens is not None else base.tokens,
            cost=self.cost if self.cost is not None else base.cost,
            calls=self.calls if self.calls is not None else base.calls,
            seconds=self.seconds if self.seconds is not None else base.seconds,
        )

    def given(self) -> dict[str, float]:
        """The limits that are set, by name (for a record such as `experiment.json`)."""
        return {name: value for name, value in asdict(self).items() if value is not None}


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
        """Why `charge` would not fit on top of spend and outstanding reservations: what it
        needs, what is left, and what to change."""
        lim = self.limits
        if lim.tokens is not None:
            left = lim.tokens - self.spent_tokens - self.reserved_tokens
            if charge.tokens > left:
                return self._shortfall("tokens", charge.tokens, left, self.reserved_tokens)
        if lim.cost is not None:
            left_cost = lim.cost - self.spent_cost - self.reserved_cost
            if charge.cost > left_cost + 1e-12:
                return self._shortfall("cost", charge.cost, left_cost, self.reserved_cost)
        if lim.calls is not None:
            left_calls = lim.calls - self.spent_calls - self.reserved_calls
            if charge.calls > left_calls:
                return self._shortfall("calls", charge.calls, left_calls, self.reserved_calls)
        return None

    def _shortfall(self, dimension: str, needs: float, left: float, held: float) -> str:
        """A refusal in words: what the call needs, what is left (what was spent, what the
        calls in flight hold), and what to change."""
        show, unit, spent_as = _DIMENSIONS[dimension]
        spent, limit = getattr(self, f"spent_{dimension}"), getattr(self.limits, dimension)
        holding = ""
        if self.reserved_calls:
            amount = "" if dimension == "calls" else f"{show(held)} held by "
            holding = f", {amount}{self.reserved_calls} call(s) in flight"
        return (
            f"it needs {show(needs)}{unit} and {show(max(left, 0))} of its {show(limit)} "
            f"{dimension} are left ({show(spent)} {spent_as}{holding}); "
            f"{_remedy(self.name, dimension)}"
        )

    def _wall_clock_over(self) -> bool:
        return self.limits.seconds is not None and self.elapsed() >= self.limits.seconds

    def __repr__(self) -> str:
        return f"Ledger({self.name!r}, spent_tokens={self.spent_tokens})"


_DIMENSIONS: dict[str, tuple[Callable[[float], str], str, str]] = {
    "tokens": (lambda n: f"{n:.0f}", " tokens", "spent"),
    "cost": (lambda usd: f"${usd:.4f}", "", "spent"),
    "calls": (lambda n: f"{n:.0f}", " call(s)", "made"),
}
"""How a refusal shows each dimension: an amount, its unit after what is needed, the spend."""


def _remedy(ledger: str, dimension: str) -> str:
    """What to raise for a ledger, named as the user declared it."""
    last = ledger.rpartition("/")[2]
    if last.startswith("agent:"):
        return f"raise the allowance of agent {last.removeprefix('agent:')!r}"
    if ledger == "batch":
        return f"raise the batch budget's {dimension}"
    if ledger == "run":
        return f"raise the run's budget {dimension} (budget={{'{dimension}': ...}})"
    if last == "team":
        return f"raise the team's {dimension} limit"
    return f"give {last!r} more {dimension} (its split share or its flow's budget)"


class Reservation:
    """An estimate held against a set of ledger chains until it is settled or released."""

    __slots__ = ("cap", "charge", "ledgers", "open")

    def __init__(self, ledgers: list[Ledger], charge: Charge) -> None:
        self.ledgers = ledgers
        self.charge = charge
        self.open = True
        self.cap: int | None = None
        """The most output tokens the call may write (set by `reserve_call`)."""

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
            when the estimate would not fit (the message says what the call needs, what is
            left and what to change). Nothing is reserved in that case.
    """
    for ledger in ledgers:
        _refuse_if_unfit(ledger, charge)
    for ledger in ledgers:
        ledger.reserved_tokens += charge.tokens
        ledger.reserved_cost += charge.cost
        ledger.reserved_calls += charge.calls
    return Reservation(ledgers, charge)


class CallEstimate(NamedTuple):
    """A model call as the budget sees it before it is sent (a named tuple: one is built for
    every call)."""

    prompt: int
    """The prompt's estimated tokens."""
    expected_output: int
    """The output it is expected to write (learned per agent): what is reserved for it."""
    max_output: int
    """The most it may write when the budget allows (the agent's `max_output_tokens`)."""
    price: Price = FREE


NEXT_CALL = "the next model call"
"""How a refusal names the call it refused (`reserve_call` says what that call holds)."""


def reserve_call(ledgers: list[Ledger], call: CallEstimate) -> Reservation:
    """Reserve a model call's expected use on every ledger and set its cap (`.cap`).

    The reservation is the prompt estimate plus the expected output, or plus all the room left
    when that is less; the call is refused when the room left (after every outstanding
    reservation) cannot hold the prompt and `EXPECTED_OUTPUT_FLOOR` tokens of output (or all
    of `max_output`, when smaller). The cap is `max_output`, lowered to the reserved output
    plus what the ledgers still have left once this call holds its reservation: what the call
    writes past its reservation is paid only from room that no call holds.

    Raises:
        BudgetExhausted: as `reserve_on` does; nothing is reserved then.
    """
    prompt, expected, most, price = call
    wanted = expected if expected < most else most
    room = _output_room(ledgers, price, prompt)
    if room is None:  # no ledger limits tokens or cost: nothing to cap
        reservation = reserve_on(ledgers, Charge(prompt + wanted, price.cost_of(prompt, wanted), 1))
        reservation.cap = most
        return reservation
    least = min(most, EXPECTED_OUTPUT_FLOOR)
    output = max(least, min(wanted, room))
    try:
        reservation = reserve_on(ledgers, Charge(prompt + output, price.cost_of(prompt, output), 1))
    except BudgetExhausted as exc:
        raise _refusal(exc, call, output, room) from None
    # Read again once reserved: a ledger kept elsewhere (a batch on Ray) is current only now.
    spare = _output_room(ledgers, price, 0) or 0
    reservation.cap = min(most, output + max(spare, 0))
    return reservation


def _refusal(exc: BudgetExhausted, call: CallEstimate, output: int, room: int) -> BudgetExhausted:
    """`exc`, saying what the refused call holds, and that a lower `max_output_tokens` would
    let it through when the room left is short of the least output a call is sent with."""
    if exc.reason != EndReason.BUDGET_EXHAUSTED_BEFORE_CALL or not exc.message.startswith(
        NEXT_CALL
    ):
        return exc
    what = f"{NEXT_CALL} (a prompt of about {call.prompt} tokens and {output} of output)"
    message = what + exc.message.removeprefix(NEXT_CALL)
    if 0 < room < min(call.max_output, EXPECTED_OUTPUT_FLOOR):
        message += f", or lower max_output_tokens to {room} or less"
    return BudgetExhausted(message, reason=exc.reason, ledger=exc.ledger)


def _output_room(ledgers: list[Ledger], price: Price, prompt: int) -> int | None:
    """Output tokens the room that no reservation holds could pay for after a prompt of
    `prompt` tokens: the tightest over the ledgers' token and cost limits (None: unlimited)."""
    room: int | None = None
    for ledger in ledgers:
        if not ledger.limited:
            continue
        lim = ledger.limits
        if lim.tokens is not None:
            left = lim.tokens - ledger.spent_tokens - ledger.reserved_tokens - prompt
            room = left if room is None or left < room else room
        if lim.cost is not None and price.output > 0:
            left_cost = lim.cost - ledger.spent_cost - ledger.reserved_cost
            afford = math.floor((left_cost - price.cost_of(prompt, 0)) * 1_000_000 / price.output)
            room = afford if room is None or afford < room else room
    return room


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
            f"{NEXT_CALL} does not fit ledger {ledger.name!r}: {misfit}",
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
