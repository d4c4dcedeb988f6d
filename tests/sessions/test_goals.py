"""The outer loop: goal evaluators decide continue, complete or blocked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from swarmflow import Agent, agent
from swarmflow.rails import GoalView
from swarmflow.testing import ScriptedModel
from tests.runtime.helpers import of_type, run_one


async def test_continue_then_complete_runs_another_round() -> None:
    def tests_pass(view: GoalView) -> tuple[str, str] | str:
        return "complete" if "fixed" in view.answer else ("continue", "the tests still fail")

    model = ScriptedModel(["I tried", "now it is fixed"])
    result = await run_one(
        [Agent("a")], lambda: agent("a", "fix"), model, goals={"a": [tests_pass]}
    )
    assert result.output.text == "now it is fixed"
    assert "the tests still fail" in (model.requests[1].messages[-1].content or "")
    decisions = [e.decision for e in of_type(result, "goal_evaluated")]
    assert decisions == ["continue", "complete"]


async def test_blocked_stops_the_session() -> None:
    model = ScriptedModel(["cannot"])
    result = await run_one(
        [Agent("a")],
        lambda: agent("a", "fix"),
        model,
        goals={"a": [lambda view: ("blocked", "needs credentials")]},
    )
    assert (result.output.state, result.output.reason) == ("stopped", "goal blocked")


async def test_async_evaluator_and_the_round_cap_is_its_own_end_reason() -> None:
    async def never(view: GoalView) -> tuple[str, str]:
        return "continue", f"round {view.round}"

    model = ScriptedModel(["x"] * 5)
    result = await run_one([Agent("a")], lambda: agent("a", "go"), model, goals={"a": [never]})
    assert (result.output.state, result.output.reason) == ("stopped", "goal round limit reached")
    assert "after 5 rounds" in result.output.detail
    model.assert_complete()


async def test_the_round_cap_is_configurable_per_agent() -> None:
    model = ScriptedModel(["x"] * 2)
    patient = Agent("a", max_goal_rounds=2)
    result = await run_one(
        [patient], lambda: agent("a", "go"), model, goals={"a": [lambda view: "continue"]}
    )
    assert result.output.reason == "goal round limit reached"
    assert len(model.requests) == 2
    model.assert_complete()


def test_a_round_cap_below_one_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_goal_rounds"):
        Agent("a", max_goal_rounds=0)
