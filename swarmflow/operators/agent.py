"""`agent(name, prompt)`: one fresh session of a declared agent, run to completion."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from pydantic import BaseModel

from swarmflow.core import team
from swarmflow.core.errors import ConfigError
from swarmflow.core.output import AgentOutput
from swarmflow.runtime.context import maybe_run
from swarmflow.sessions.call import call_agent


def agent(
    name: str,
    prompt: Any = "",
    /,
    *,
    output: type[BaseModel] | None = None,
    workspace: Any = None,
    **card_vars: Any,
) -> Coroutine[Any, Any, AgentOutput]:
    """Run agent `name` on `prompt`; await it for the `AgentOutput`.

    `output=` names a pydantic model the answer must validate against (re-asked on failure);
    `workspace=` lends another agent's output workspace (or a path) to this one; the other
    keyword arguments are the role card's template variables.

    Raises (when awaited):
        TopologyError: a value in the prompt or card variables comes from an agent with no
            edge to `name`; nothing was sent.
        BudgetExhausted: the session was stopped by a budget or allowance.
        AgentFailed: the session ended in error (its partial output is on `.output`).
    """
    # Not `async def`: returning the runtime's coroutine saves a frame per call in a fan-out.
    return call_agent(name, prompt, output=output, workspace=workspace, **card_vars)


class Agent(team.Agent):
    """One agent's declaration (`swarmflow.core.team.Agent`), callable inside a running flow:
    `await coder("task")` is `await agent("coder", "task")`."""

    def __init__(self, name: str | None = None, /, **data: Any) -> None:
        super().__init__(name, **data)  # restated: the pydantic plugin reads each class's own

    def __call__(self, prompt: Any = "", /, **kwargs: Any) -> Coroutine[Any, Any, AgentOutput]:
        if maybe_run() is None:
            raise ConfigError(f"agent {self.name!r} can only be called inside a running flow")
        return agent(self.name, prompt, **kwargs)
