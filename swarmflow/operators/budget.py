"""`budget()`: what remains, as seen from the current branch."""

from __future__ import annotations

from swarmflow.core.budget import BudgetSnapshot
from swarmflow.runtime.context import current_run, current_scope


async def budget() -> BudgetSnapshot:
    """A frozen snapshot of the remaining tokens, cost, calls and seconds for this branch."""
    run = current_run("budget()")
    scope = current_scope()
    node = run.state.graph.open("budget", scope.branch, scope.node)
    run.state.graph.close(node)
    return scope.ledger.snapshot()
