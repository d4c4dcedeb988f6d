"""Rails: hooks, priority, per-agent visibility, veto and amend."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swarmflow import Agent, agent, agent_session
from swarmflow.core.errors import RailError
from swarmflow.core.messages import Message, ModelRequest
from swarmflow.rails import Amend, Hook, RailContext, Veto, rail
from swarmflow.runtime.rail_registry import Rail, Rails
from swarmflow.testing import ScriptedModel, tool_call
from tests.runtime.helpers import of_type, run_one


def test_unknown_hook_is_an_error_not_a_no_op() -> None:
    with pytest.raises(RailError, match="before_modle_call"):
        rail("typo", ["before_modle_call"], lambda ctx: None)


def test_rails_registry_rejects_non_rails_and_empty_hooks() -> None:
    with pytest.raises(RailError):
        Rails().register("not a rail")  # type: ignore[arg-type]
    with pytest.raises(RailError, match="no hook"):
        Rails().register(Rail("empty", frozenset(), lambda ctx: None))


async def test_priority_orders_rails_and_visibility_filters_agents() -> None:
    seen: list[str] = []

    def recorder(name: str):  # type: ignore[no-untyped-def]
        return lambda ctx: seen.append(f"{name}:{ctx.agent}")

    rails = [
        rail("low", ["turn_start"], recorder("low"), priority=1),
        rail("high", ["turn_start"], recorder("high"), priority=10),
        rail("only-b", ["turn_start"], recorder("only-b"), priority=5, agents=["b"]),
    ]

    async def body() -> None:
        await agent("a", "x")
        await agent("b", "y")

    await run_one([Agent("a"), Agent("b")], body, ScriptedModel(["1", "2"]), rails=rails)
    assert seen == ["high:a", "low:a", "high:b", "only-b:b", "low:b"]


async def test_amend_changes_the_model_request() -> None:
    def inject(ctx: RailContext) -> Amend:
        request: ModelRequest = ctx.payload
        extra = Message("user", "Remember: be terse.")
        return Amend(replace(request, messages=(*request.messages, extra)))

    model = ScriptedModel(["ok"])
    rails = [rail("terse", [Hook.BEFORE_MODEL_CALL], inject)]
    await run_one([Agent("a")], lambda: agent("a", "x"), model, rails=rails)
    assert model.requests[0].messages[-1].content == "Remember: be terse."


async def test_veto_of_a_tool_call_skips_it_and_tells_the_model(tmp_path) -> None:
    def guard(ctx: RailContext) -> Veto | None:
        return Veto("writes are frozen") if ctx.extra.get("never") is None else None

    model = ScriptedModel([tool_call("write_file", path="a.txt", content="x"), "understood"])
    writer = Agent("w", tools=["write_file"], workspace="local")
    rails = [rail("freeze", ["before_tool_call"], guard, agents=["w"])]
    result = await run_one([writer], lambda: agent("w", "go"), model, rails=rails, repo=tmp_path)
    assert not (tmp_path / "a.txt").exists()
    vetoed = of_type(result, "rail_vetoed")
    assert vetoed and vetoed[0].rail == "freeze" and vetoed[0].hook == "before_tool_call"
    assert "writes are frozen" in (model.requests[1].messages[-1].content or "")


async def test_veto_of_a_model_call_ends_the_session_in_error() -> None:
    model = ScriptedModel(["never sent"])
    rails = [rail("kill", ["before_model_call"], lambda ctx: Veto("no more calls"))]
    result = await run_one([Agent("a")], lambda: agent("a", "x"), model, rails=rails)
    assert model.requests == []
    ended = of_type(result, "session_ended")[0]
    assert ended.state == "error" and "no more calls" in ended.detail


async def test_on_error_rail_sees_the_fault() -> None:
    faults: list[str] = []

    def broken(req: ModelRequest) -> str:
        raise RuntimeError("model exploded")

    from swarmflow.testing import FunctionModel

    rails = [rail("watch", ["on_error"], lambda ctx: faults.append(str(ctx.error)))]
    await run_one([Agent("a")], lambda: agent("a", "x"), FunctionModel(broken), rails=rails)
    assert faults == ["model exploded"]


async def test_turn_end_sees_each_turn_of_a_session() -> None:
    ends: list[str] = []

    async def body() -> None:
        async with agent_session("a") as s:
            await s.send("one")
            await s.send("two")

    rails = [rail("ends", ["turn_end"], lambda ctx: ends.append(ctx.payload))]
    await run_one([Agent("a")], body, ScriptedModel(["r1", "r2"]), rails=rails)
    assert ends == ["r1", "r2"]
