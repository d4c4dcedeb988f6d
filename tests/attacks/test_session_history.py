"""A session's conversation stays well formed however a turn ends: a tool call the model made
is always answered before the session's next request (servers refuse one left unanswered)."""

from __future__ import annotations

from typing import Any

from swarmflow import Agent, Team, agent_session, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step, tool_call

from .test_cancellation import unanswered_calls

TEAM = Team([Agent("w", tools=["submit", "list_files"], workspace="local")])


@flow(team=TEAM)
async def two_turns() -> str:
    async with agent_session("w") as session:
        await session.send("submit and look")
        return str((await session.send("and now?")).text)


async def test_calls_after_a_submit_in_the_same_response_are_answered(tmp_path: Any) -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> Any:
        seen.append(request)
        if request.prompt == "submit and look":
            return Step(tool_calls=(tool_call("submit", summary="done"),
                                    tool_call("list_files", path=".")))  # fmt: skip
        return "still here"

    result = await run(two_turns, model=FunctionModel(model), repo=tmp_path,
                       runs_root=tmp_path / "runs", raise_on_failure=False)  # fmt: skip
    assert result.status == "ok", result.error
    assert result.output == "still here"
    assert seen[-1].prompt == "and now?" and unanswered_calls(seen[-1]) == []
