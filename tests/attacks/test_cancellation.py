"""Cancel scopes that fire in the middle of work: what was in flight stops, what is kept stays
consistent, and the next use of the same session sends a well-formed conversation."""

from __future__ import annotations

from typing import Any

import anyio

from swarmflow import Agent, Team, agent_session, flow, run, tool
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call

started = anyio.Event()


@tool
async def hang(topic: str) -> str:
    """Never answers.

    Args:
        topic: Anything.
    """
    started.set()
    await anyio.Event().wait()
    return topic


TEAM = Team([Agent("w", tools=[hang])])


def unanswered_calls(request: ModelRequest) -> list[str]:
    """Ids of tool calls in the conversation that no tool message answers."""
    asked = [c.id for m in request.messages for c in m.tool_calls]
    answered = {m.tool_call_id for m in request.messages if m.role == "tool"}
    return [i for i in asked if i not in answered]


@flow(team=TEAM)
async def cancelled_mid_tool() -> str:
    global started
    started = anyio.Event()
    async with agent_session("w") as session:
        async with anyio.create_task_group() as tg:

            async def first_turn() -> None:
                await session.send("look it up")

            tg.start_soon(first_turn)
            await started.wait()  # the tool is running now
            tg.cancel_scope.cancel()
        return str((await session.send("just answer")).text)


async def test_a_turn_cancelled_mid_tool_leaves_a_well_formed_history() -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> Any:
        seen.append(request)
        if request.prompt == "look it up":
            return tool_call("hang", topic="x")
        return "answered"

    result = await run(cancelled_mid_tool, model=FunctionModel(model), raise_on_failure=False)
    assert result.status == "ok", result.error
    assert result.output == "answered"
    last = seen[-1]
    assert last.prompt == "just answer"
    assert unanswered_calls(last) == []  # every tool call the model made has its answer
