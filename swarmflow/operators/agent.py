"""`agent(name, prompt)`: one fresh session of a declared agent, run to completion."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from swarmflow.core.output import AgentOutput
from swarmflow.runtime.calls import call_agent
from swarmflow.runtime.context import Scope, current_run, current_scope, reset_scope, set_scope


async def agent(
    name: str,
    prompt: Any = "",
    /,
    *,
    output: type[BaseModel] | None = None,
    workspace: Any = None,
    **card_vars: Any,
) -> AgentOutput:
    """Run agent `name` on `prompt` and return its `AgentOutput`.

    `output=` names a pydantic model the answer must validate against (re-asked on failure);
    `workspace=` lends another agent's output workspace (or a path) to this one; the other
    keyword arguments are the role card's template variables.

    Raises:
        TopologyError: a value in the prompt or card variables comes from an agent with no
            edge to `name`; nothing was sent.
        BudgetExhausted: the session was stopped by a budget or allowance.
        AgentFailed: the session ended in error (its partial output is on `.output`).
    """
    run = current_run(f"agent({name!r})")
    parent = current_scope()
    node = run.graph.open("agent", parent.branch, parent.node, name)
    status = "failed"
    token = set_scope(Scope(parent.branch, parent.ledger, node))
    try:
        result = await call_agent(name, prompt, output=output, workspace=workspace, **card_vars)
        status = "ok"
        return result
    finally:
        reset_scope(token)
        run.graph.close(node, status)
