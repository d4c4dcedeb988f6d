"""The shared budget of a batch on Ray: one batch ledger in a Ray actor, an adapter on workers.

`BudgetKeeper` runs as one Ray actor per batch (synchronous, one call at a time) and holds the
batch's `BatchLedger`: its reservations are made by `core.budget.reserve_on`, so a refusal is
the same refusal, for the same reasons, as in a local batch. On a worker, each run's ledger has
an `ActorLedger` as its parent (the `parent_ledger` option of `run()`). The run's ledgers work
as always; the adapter forwards what they do to the keeper:

- a reservation that reaches the batch ledger is one blocking round trip: the keeper checks and
  holds the estimate atomically, or refuses, and nothing is sent to the model;
- a settlement is one message: the estimate goes and the actual spend comes in one step of
  the keeper, so that no other worker's reservation can take the estimate's room in between
  (the run's ledgers write the two one after the other, in one synchronous step: the release
  is held until control goes back to the event loop, and the spend written meanwhile joins
  it; a release with no spend after it, a call that was never answered, goes alone then);
- settlements, releases and replayed spend are sent without waiting, in order (Ray runs one
  caller's calls to a synchronous actor in the order they were made), and the estimate holds
  its room until then. When the run ends, `close` waits for the last of them, so the
  keeper's ledger counts every settled call of a run before the run's result is back with
  the batch (which reads the ledger then).

So the overspend bound is the local one: the estimate errors of the calls in flight, across
the whole cluster. A worker that dies loses its calls in flight: the next attempt at its task
drops what they held (`begin`), and the spend of an answered call that was not yet journaled is
not counted. Spend replayed from a journal is counted once: by the attempt that spent it, or by
the replay when the run was begun by an earlier invocation of the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import replace
from typing import Any

import ray
from ray.exceptions import RayError

from swarmflow.batches.ledger import BatchLedger
from swarmflow.core.budget import Charge, Limits, Reservation, reserve_on
from swarmflow.core.errors import BudgetExhausted
from swarmflow.durable.replay import spend

DIMENSIONS = ("tokens", "cost", "calls")
FIELDS = tuple(f"{kind}_{dim}" for kind in ("spent", "reserved") for dim in DIMENSIONS)
View = tuple[float, ...]
"""The batch ledger's figures, in the order of `FIELDS`."""
Verdict = tuple[str, str] | None
"""A refusal's reason and message, or None when the reservation is held."""


class BudgetKeeper:
    """The batch ledger, as a Ray actor: reservations, settlements and who holds what."""

    def __init__(self, limits: Limits) -> None:
        self.ledger = BatchLedger(limits)
        self.held: dict[str, Charge] = {}
        self.attempts: Counter[str] = Counter()

    def begin(self, task: str) -> None:
        """A new attempt at `task`: drop what an earlier attempt (on a dead worker) still holds."""
        self.release(task, self.held.pop(task, Charge()))
        self.attempts[task] += 1

    def reserve(self, task: str, charge: Charge) -> tuple[Verdict, View]:
        """Hold `charge` for `task`, or say why the batch ledger refuses it."""
        try:
            reserve_on([self.ledger], Charge(*charge))
        except BudgetExhausted as exc:
            return (exc.reason, exc.message), self.view()
        self.held[task] = _plus(self.held.get(task, Charge()), Charge(*charge))
        return None, self.view()

    def release(self, task: str, charge: Charge) -> None:
        """Give back an estimate that `task` held (settled, released, or lost with a worker)."""
        Reservation([self.ledger], Charge(*charge)).release()
        self.held[task] = _plus(self.held.get(task, Charge()), _minus(Charge(*charge)))

    def settle(self, task: str, held: Charge, spent: Charge) -> None:
        """A call of `task` was answered: its estimate `held` goes and `spent` comes, in one
        step, so that no reservation is let into the room between the two."""
        self.release(task, held)
        self.spend(task, spent, False)

    def spend(self, task: str, charge: Charge, replayed: bool) -> None:
        """Count what a call of `task` spent; a replay of an earlier attempt's call was counted."""
        if replayed and self.attempts[task] > 1:
            return
        spend([self.ledger], Charge(*charge))

    def view(self) -> View:
        return tuple(getattr(self.ledger, name) for name in FIELDS)

    def state(self) -> tuple[int, float, str | None]:
        """Tokens and cost spent, and the refusal that stops the batch, if any."""
        return self.ledger.spent_tokens, self.ledger.spent_cost, self.ledger.refused


def _plus(a: Charge, b: Charge) -> Charge:
    return Charge(a.tokens + b.tokens, a.cost + b.cost, a.calls + b.calls)


def _minus(a: Charge) -> Charge:
    return Charge(-a.tokens, -a.cost, -a.calls)


def _figure(name: str) -> property:
    """A ledger field read from the batch ledger's view; writes go through `_write`."""

    def read(self: ActorLedger) -> Any:
        return self._view[name]

    def write(self: ActorLedger, value: Any) -> None:
        self._write(name, value)

    return property(read, write)


class ActorLedger(BatchLedger):
    """A run's parent on a Ray worker: the batch ledger held by a `BudgetKeeper` actor.

    Its spent and reserved figures are the batch's, as of this worker's last reservation plus
    what this run did since, so `budget()` in a flow and the after-call check see the batch.
    """

    __slots__ = ("_accepted", "_held", "_keeper", "_last", "_pending", "_task", "_view")

    spent_tokens = _figure("spent_tokens")
    spent_cost = _figure("spent_cost")
    spent_calls = _figure("spent_calls")
    reserved_tokens = _figure("reserved_tokens")
    reserved_cost = _figure("reserved_cost")
    reserved_calls = _figure("reserved_calls")

    def __init__(self, keeper: Any, task: str, limits: Limits) -> None:
        self._view: dict[str, Any] = dict.fromkeys(FIELDS, 0)
        self._pending: dict[str, Any] = {}
        self._accepted: tuple[Charge, set[str]] | None = None
        self._held: Charge | None = None
        """A closed reservation's estimate, not yet sent: its settlement's spend may follow."""
        self._keeper: Any = None  # set after the base class zeroes the fields
        self._task = task
        # The keeper's ledger keeps the wall clock (it started with the batch); this one does not.
        super().__init__(replace(limits, seconds=None))
        self.limited = any(getattr(limits, d) is not None for d in (*DIMENSIONS, "seconds"))
        self._keeper = keeper
        self._last: Any = keeper.begin.remote(task)
        """The last message sent to the keeper: it runs them in order, so when this one is
        done, every one before it is."""

    def _over(self) -> str | None:
        return None  # the keeper says, atomically with the reservation (in `_misfit`)

    def _wall_clock_over(self) -> bool:
        return False  # likewise

    def _misfit(self, charge: Charge) -> str | None:
        """Reserve `charge` on the keeper (one round trip); raise its refusal as it gave it."""
        self._drop_unconfirmed()
        self._send_held()
        verdict, view = ray.get(self._keeper.reserve.remote(self._task, charge))
        self._view.update(zip(FIELDS, view, strict=True))
        if verdict is not None:
            reason, message = verdict
            self._remember(message)
            raise BudgetExhausted(message, reason=reason, ledger=self.name)
        self._accepted = (charge, {f"reserved_{d}" for d in DIMENSIONS})
        return None

    async def close(self) -> None:
        """The run ended: give back a reservation the keeper holds that the run never took,
        send what is held, and wait until the keeper has run every message of this run."""
        self._drop_unconfirmed()
        self._send_held()
        with contextlib.suppress(RayError):  # the keeper is gone: the batch is over
            await self._last

    def _write(self, name: str, value: Any) -> None:
        if self._keeper is None:
            self._view[name] = value
            return
        if self._accepted is not None and name in self._accepted[1]:
            # `reserve_on` taking the estimate the keeper already holds (and shows in the view).
            self._accepted[1].discard(name)
            if not self._accepted[1]:
                self._accepted = None
            return
        self._pending[name] = self._pending.get(name, 0) + value - self._view[name]
        self._view[name] = value
        self._flush(name.partition("_")[0])

    def _flush(self, kind: str) -> None:
        """Send a settlement, release or replayed spend once all its dimensions were written."""
        names = [f"{kind}_{d}" for d in DIMENSIONS]
        if not all(n in self._pending for n in names):
            return
        tokens, cost, calls = (self._pending.pop(n) for n in names)
        charge = Charge(int(tokens), float(cost), int(calls))
        if kind == "reserved":  # a reservation closed: settled (its spend follows) or released
            self._send_held()
            self._held = _minus(charge)
            _when_idle(self._send_held)
        elif self._held is not None:  # the spend of the settlement that closed it
            held, self._held = self._held, None
            self._last = self._keeper.settle.remote(self._task, held, charge)
        else:  # spend without a close: a journal's replay
            self._last = self._keeper.spend.remote(self._task, charge, True)

    def _send_held(self) -> None:
        """Send a closed reservation's release on its own: no spend came with it."""
        if self._held is not None:
            held, self._held = self._held, None
            self._last = self._keeper.release.remote(self._task, held)

    def _drop_unconfirmed(self) -> None:
        """A reservation the keeper accepted but `reserve_on` did not take (another ledger of
        the call refused it after this one said yes) is given back."""
        if self._accepted is not None:
            self._last = self._keeper.release.remote(self._task, self._accepted[0])
            self._accepted = None


def _when_idle(send: Any) -> None:
    """Call `send` once control goes back to the event loop (a settlement's spend is written
    before that, in the same step); outside a loop, the next reservation or `close` sends."""
    try:
        asyncio.get_running_loop().call_soon(send)
    except RuntimeError:
        return
