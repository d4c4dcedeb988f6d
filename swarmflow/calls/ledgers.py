"""Which ledgers a model call charges: the one rule, used by every caller and by a replay.

A call of agent A made in a branch charges the branch's ledger chain (up to the run's) and
A's own allowance, when it has one. A replay charges the same ones, except the run's: a
resumed run's own ledger starts from what the earlier processes' event log says was spent.
"""

from __future__ import annotations

from swarmflow.core.budget import Charge, Ledger, all_ledgers
from swarmflow.core.team import Agent
from swarmflow.runtime.context import RunContext


def charged_ledgers(run: RunContext, branch: Ledger, agent: Agent) -> list[Ledger]:
    """Every ledger a call of `agent` in the branch of `branch` charges, nearest first.

    Cached per branch ledger and agent: thousands of sessions share a handful of sets.
    """
    key = (id(branch), agent.name)
    found = run.state.ledger_sets.get(key)
    if found is None or found[0] is not branch:
        heads = [branch]
        allowance = run.state.agent_ledger(agent)
        if allowance is not None:
            heads.append(allowance)
        found = run.state.ledger_sets[key] = (branch, all_ledgers(heads))
    return found[1]


def charge_recorded(run: RunContext, ledgers: list[Ledger], charge: Charge) -> None:
    """Count a recorded call's spend on `ledgers` but the run's own (its count already holds
    every call of the earlier processes, `durable.interrupted.resumed`): nothing new is spent."""
    root = run.state.ledger
    for ledger in ledgers:
        if ledger is root:
            continue
        ledger.spent_tokens += charge.tokens
        ledger.spent_cost += charge.cost
        ledger.spent_calls += charge.calls
