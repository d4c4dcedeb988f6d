"""`team` composes: a branch of `parallel`, a stage of `pipeline`, under budgets and scopes."""

from __future__ import annotations

from typing import Any

import anyio

from swarmflow import Agent, ConfigError, Ok, TeamResult, budget, parallel, pipeline, team
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

ROLES = [Agent("lead", tools=["message_agent", "submit"]), Agent("coder")]
EDGES = [("lead", "coder")]


def _policy(req: ModelRequest) -> object:
    last = req.messages[-1]
    if req.agent == "coder":
        return f"coded {last.content.splitlines()[-1]}"
    if last.role != "tool":
        return tool_call("message_agent", to="coder", text=req.messages[0].content or "")
    return tool_call("submit", summary=last.content)


async def _run(body: Any, policy: Any = _policy) -> Any:
    return await run_one(ROLES, body, FunctionModel(policy), edges=EDGES)


async def test_a_team_is_a_branch_of_parallel() -> None:
    async def body() -> list[str]:
        outs = await parallel(lambda i: team(f"task {i}", lead="lead"), n=3)
        assert all(isinstance(o, Ok) for o in outs)
        return [o.value.answer for o in outs]

    result = await _run(body)
    assert result.output == ["coded task 0", "coded task 1", "coded task 2"]
    # Each branch had its own sessions: three teams of two roles.
    assert len(of_type(result, "session_started")) == 6
    assert {e.branch for e in of_type(result, "team_ended")} == {
        "parallel[0]", "parallel[1]", "parallel[2]"
    }  # fmt: skip


async def test_a_mistake_inside_a_parallel_branch_fails_the_run() -> None:
    async def body() -> object:
        return await parallel(team("a", lead="lead"), team("b", lead="nobody"))

    result = await _run(body)
    assert isinstance(result.error, ConfigError) and "nobody" in str(result.error)


async def test_a_team_is_a_stage_of_a_pipeline() -> None:
    async def body() -> list[str]:
        stream = pipeline(["x", "y"], lambda item: team(f"task {item}", lead="lead"))
        return sorted([o.value.answer async for o in stream])

    result = await _run(body)
    assert result.output == ["coded task x", "coded task y"]


async def test_a_team_spends_from_the_callers_budget() -> None:
    async def body() -> tuple[int, int, TeamResult]:
        before = (await budget()).tokens
        out = await team("task", lead="lead")
        after = (await budget()).tokens
        return before, after, out

    result = await run_one(ROLES, body, FunctionModel(_policy), edges=EDGES,
                           budget={"tokens": 100_000})  # fmt: skip
    before, after, out = result.output
    spent = sum(r.tokens for r in out.roles.values())
    assert spent > 0 and before - after == spent


async def test_a_team_budget_in_a_parallel_split_stops_only_that_team() -> None:
    async def body() -> list[str]:
        outs = await parallel(team("a", lead="lead", limits=5), team("b", lead="lead"))
        return [o.value.reason for o in outs]

    result = await _run(body)
    assert result.output == ["budget exhausted", "submitted"]


async def test_a_cancel_scope_around_a_team_cancels_every_role() -> None:
    scope = anyio.CancelScope()

    async def policy(req: ModelRequest) -> object:
        if req.agent == "coder":
            scope.cancel()  # cancelled from outside, mid-message
            await anyio.sleep_forever()
        return _policy(req)

    async def body() -> str:
        with scope:
            await team("task", lead="lead")
        return "went on"

    result = await _run(body, policy)
    assert result.status == "ok" and result.output == "went on"
    ended = {e.agent: e.reason for e in of_type(result, "session_ended")}
    assert ended == {"lead": "cancelled", "coder": "cancelled"}
    assert not of_type(result, "team_ended")
    team_op = [e for e in of_type(result, "operator_finished") if e.operator == "team"]
    assert team_op[0].status == "cancelled"


async def test_a_team_started_in_a_cancelled_scope_sends_nothing() -> None:
    model = FunctionModel(_policy)

    async def body() -> str:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await team("task", lead="lead")
        return "skipped"

    result = await run_one(ROLES, body, model, edges=EDGES)
    assert result.output == "skipped" and not model.requests
    assert not of_type(result, "session_started")
