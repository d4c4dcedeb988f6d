"""`budget()`: what remains, as seen from the current branch."""

from __future__ import annotations

from collections.abc import Callable

from swarmflow.core.budget import BudgetSnapshot, Ledger
from swarmflow.core.errors import BudgetExhausted
from swarmflow.core.states import EndReason
from swarmflow.runtime.context import current_run, current_scope


async def budget() -> BudgetSnapshot:
    """A frozen snapshot of the remaining tokens, cost, calls and seconds for this branch."""
    run = current_run("budget()")
    scope = current_scope()
    node = run.state.graph.open("budget", scope.branch, scope.node)
    run.state.graph.close(node)
    return scope.ledger.snapshot()


def nothing_left(ledger: Ledger, what: Callable[[], str]) -> BudgetExhausted | None:
    """Why the next branch of a fan-out, or the next round of a loop, may not start (`what()`
    says which): the budget seen from `ledger` has no time, tokens, cost or calls left; None
    while it has some.

    What calls in flight hold counts as used, as it does when a call reserves: a model call
    made now would be refused. Reason "wall clock" when the time is up, else "budget exceeded".
    """
    left = ledger.snapshot()
    if left.seconds is not None and left.seconds <= 0:
        return BudgetExhausted(
            f"{what()}: the budget's time is up",
            reason=EndReason.WALL_CLOCK.value,
            ledger=ledger.name,
        )
    for dimension, amount in (("tokens", left.tokens), ("cost", left.cost), ("calls", left.calls)):
        if amount is not None and amount <= 0:
            return BudgetExhausted(
                f"{what()}: the budget has no {dimension} left (spent, or held by calls in flight)",
                reason=EndReason.BUDGET_EXCEEDED.value,
                ledger=ledger.name,
            )
    return None
