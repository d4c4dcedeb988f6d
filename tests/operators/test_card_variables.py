"""A role card's variables may take any name that is not one of `agent()`'s own options."""

from __future__ import annotations

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel


async def test_card_variables_named_name_and_prompt_reach_the_card() -> None:
    seen: list[str] = []

    def model(request: ModelRequest) -> str:
        seen.append(request.messages[0].content or "")
        return "ok"

    team = Team([Agent("reviewer", card="Review {{ name }} about {{ prompt }}.")])

    @flow(team=team)
    async def review() -> str:
        return (await agent("reviewer", "go", name="the parser", prompt="errors")).text

    result = await run(review, model=FunctionModel(model), events=None)
    assert result.output == "ok"
    assert "Review the parser about errors." in seen[0]
