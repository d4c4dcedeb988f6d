"""Rails: hooks, priority, per-agent visibility, and what a veto and an amend do at each hook."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, AgentFailed, agent, agent_session, budget
from swarmflow.core.errors import RailError
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, Usage
from swarmflow.core.ports import ToolResult
from swarmflow.rails import Amend, Hook, RailContext, Veto, rail
from swarmflow.runtime.rails import Rail, Rails
from swarmflow.testing import FunctionModel, ScriptedModel, Step, tool_call
from tests.runtime.helpers import of_type, run_one


def veto(reason: str) -> Any:
    return lambda ctx: Veto(reason)


def amend(change: Any) -> Any:
    return lambda ctx: Amend(change(ctx.payload))


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


def _stopped_by_veto(result: Any, hook: str, reason: str) -> None:
    """The session stopped (not errored) with the veto recorded, and the run went on."""
    assert result.status == "ok"
    vetoed = of_type(result, "rail_vetoed")
    assert [(v.hook, v.reason) for v in vetoed] == [(hook, reason)]
    ended = of_type(result, "session_ended")[0]
    assert (ended.state, ended.reason) == ("stopped", "vetoed by a rail")
    assert reason in ended.detail
    assert of_type(result, "agent_finished")


# -- turn_start ------------------------------------------------------------------------------


async def test_turn_start_amend_replaces_the_message() -> None:
    model = ScriptedModel(["ok"])
    rails = [rail("prefix", ["turn_start"], amend(lambda text: f"[ticket 7] {text}"))]
    await run_one([Agent("a")], lambda: agent("a", "fix it"), model, rails=rails)
    assert model.requests[0].prompt == "[ticket 7] fix it"


async def test_turn_start_veto_runs_nothing_and_stops_the_session() -> None:
    model = ScriptedModel([])
    rails = [rail("closed", ["turn_start"], veto("out of hours"))]
    result = await run_one([Agent("a")], lambda: agent("a", "x"), model, rails=rails)
    assert model.requests == []
    assert (result.output.state, result.output.text) == ("stopped", "")
    _stopped_by_veto(result, "turn_start", "out of hours")


# -- before_model_call -----------------------------------------------------------------------


async def test_before_model_call_amend_changes_the_request() -> None:
    def inject(ctx: RailContext) -> Amend:
        request: ModelRequest = ctx.payload
        extra = Message("user", "Remember: be terse.")
        return Amend(replace(request, messages=(*request.messages, extra)))

    model = ScriptedModel(["ok"])
    rails = [rail("terse", [Hook.BEFORE_MODEL_CALL], inject)]
    await run_one([Agent("a")], lambda: agent("a", "x"), model, rails=rails)
    assert model.requests[0].messages[-1].content == "Remember: be terse."


async def test_before_model_call_veto_sends_nothing_and_releases_the_reservation() -> None:
    model = ScriptedModel([])
    rails = [rail("kill", ["before_model_call"], veto("no more calls"))]

    async def body() -> Any:
        await agent("a", "x")
        return await budget()

    result = await run_one([Agent("a")], body, model, rails=rails, budget={"tokens": 50_000})
    assert model.requests == []
    assert result.output.tokens == 50_000  # nothing spent, nothing left reserved
    _stopped_by_veto(result, "before_model_call", "no more calls")


# -- after_model_call ------------------------------------------------------------------------


async def test_after_model_call_amend_changes_what_the_session_acts_on() -> None:
    model = ScriptedModel(["the secret is 42"])
    redact = amend(lambda r: replace(r, text=r.text.replace("42", "[redacted]")))
    rails = [rail("redact", ["after_model_call"], redact)]
    result = await run_one([Agent("a")], lambda: agent("a", "x"), model, rails=rails)
    assert result.output.text == "the secret is [redacted]"


async def test_after_model_call_veto_still_settles_the_spend() -> None:
    paid = Usage(input=1_000, output=500)
    model = ScriptedModel([Step(text="forbidden words", usage=paid)])
    rails = [rail("filter", ["after_model_call"], veto("policy"))]

    async def body() -> Any:
        out = await agent("a", "x")
        return out, await budget()

    result = await run_one([Agent("a")], body, model, rails=rails, budget={"tokens": 50_000})
    out, left = result.output
    assert out.text == "" and out.usage == paid
    assert left.tokens == 50_000 - 1_500 and left.spent_tokens == 1_500  # nothing still reserved
    called = of_type(result, "model_called")
    assert [(c.tokens_in, c.tokens_out) for c in called] == [(1_000, 500)]
    _stopped_by_veto(result, "after_model_call", "policy")


# -- before_tool_call ------------------------------------------------------------------------


async def test_before_tool_call_amend_replaces_the_arguments(tmp_path: Path) -> None:
    def sandbox(ctx: RailContext) -> Amend:
        return Amend({**ctx.payload.model_dump(), "path": f"sandbox/{ctx.payload.path}"})

    model = ScriptedModel([tool_call("write_file", path="a.txt", content="x"), "done"])
    writer = Agent("w", tools=["write_file"], workspace="local")
    rails = [rail("sandbox", ["before_tool_call"], sandbox)]
    result = await run_one([writer], lambda: agent("w", "go"), model, rails=rails, repo=tmp_path)
    assert (tmp_path / "sandbox" / "a.txt").read_text() == "x"
    assert not (tmp_path / "a.txt").exists()
    assert of_type(result, "tool_executed")[0].arguments["path"] == "sandbox/a.txt"


async def test_before_tool_call_amend_is_validated_against_the_schema(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("write_file", path="a.txt", content="x"), "done"])
    writer = Agent("w", tools=["write_file"], workspace="local")
    rails = [rail("bad", ["before_tool_call"], lambda ctx: Amend({"path": 3}))]
    result = await run_one([writer], lambda: agent("w", "go"), model, rails=rails, repo=tmp_path)
    executed = of_type(result, "tool_executed")[0]
    assert not executed.ok and "invalid arguments for tool 'write_file'" in executed.result
    assert not (tmp_path / "a.txt").exists()


async def test_before_tool_call_veto_skips_it_and_tells_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("write_file", path="a.txt", content="x"), "understood"])
    writer = Agent("w", tools=["write_file"], workspace="local")
    rails = [rail("freeze", ["before_tool_call"], veto("writes are frozen"), agents=["w"])]
    result = await run_one([writer], lambda: agent("w", "go"), model, rails=rails, repo=tmp_path)
    assert not (tmp_path / "a.txt").exists()
    vetoed = of_type(result, "rail_vetoed")
    assert vetoed and vetoed[0].rail == "freeze" and vetoed[0].hook == "before_tool_call"
    assert "writes are frozen" in of_type(result, "tool_refused")[0].reason
    assert "writes are frozen" in (model.requests[1].messages[-1].content or "")
    assert result.output.text == "understood"


# -- after_tool_call -------------------------------------------------------------------------


async def test_after_tool_call_amend_changes_the_observation(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("password=hunter2\n")
    model = ScriptedModel([tool_call("read_file", path="f.txt"), "read it"])
    reader = Agent("r", tools=["read_file"], workspace="local")
    scrub = amend(lambda res: ToolResult(res.text.replace("hunter2", "***"), ok=res.ok))
    rails = [rail("scrub", ["after_tool_call"], scrub)]
    await run_one([reader], lambda: agent("r", "go"), model, rails=rails, repo=tmp_path)
    observation = model.requests[1].messages[-1].content or ""
    assert "password=***" in observation and "hunter2" not in observation


async def test_after_tool_call_veto_withholds_the_result_and_refuses_a_submit() -> None:
    model = ScriptedModel([tool_call("submit", summary="done early"), "the real answer"])
    rails = [rail("review", ["after_tool_call"], veto("tests not run"))]
    result = await run_one(
        [Agent("a", tools=["submit"])], lambda: agent("a", "go"), model, rails=rails
    )
    assert (result.output.reason, result.output.text) == ("completed", "the real answer")
    observation = model.requests[1].messages[-1].content or ""
    assert "withheld" in observation and "tests not run" in observation
    model.assert_complete()


# -- on_error --------------------------------------------------------------------------------


def _broken(request: ModelRequest) -> str:
    raise RuntimeError("model exploded")


async def _caught(name: str) -> AgentFailed:
    try:
        await agent(name, "x")
    except AgentFailed as exc:
        return exc
    raise AssertionError("the agent call did not fail")


async def test_on_error_rail_sees_the_fault_and_amend_replaces_the_error() -> None:
    faults: list[str] = []

    def translate(ctx: RailContext) -> Amend:
        faults.append(str(ctx.error))
        return Amend(LookupError(f"upstream model down ({ctx.error})"))

    rails = [rail("translate", ["on_error"], translate)]
    result = await run_one([Agent("a")], lambda: _caught("a"), FunctionModel(_broken), rails=rails)
    assert faults == ["model exploded"]
    failed: AgentFailed = result.output
    assert isinstance(failed.__cause__, LookupError)
    assert "upstream model down" in str(failed)
    assert of_type(result, "session_ended")[0].state == "error"


async def test_on_error_veto_is_recorded_and_the_fault_stands() -> None:
    rails = [rail("deny", ["on_error"], veto("not my problem"))]
    result = await run_one([Agent("a")], lambda: _caught("a"), FunctionModel(_broken), rails=rails)
    assert isinstance(result.output.__cause__, RuntimeError)
    assert [v.hook for v in of_type(result, "rail_vetoed")] == ["on_error"]
    assert of_type(result, "session_ended")[0].state == "error"


# -- turn_end --------------------------------------------------------------------------------


async def test_turn_end_amend_replaces_the_answer_and_sees_each_turn() -> None:
    ends: list[str] = []

    def shout(ctx: RailContext) -> Amend:
        ends.append(ctx.payload)
        return Amend(ctx.payload.upper())

    async def body() -> list[str]:
        async with agent_session("a") as s:
            return [(await s.send("one")).text, (await s.send("two")).text]

    rails = [rail("shout", ["turn_end"], shout)]
    result = await run_one([Agent("a")], body, ScriptedModel(["r1", "r2"]), rails=rails)
    assert ends == ["r1", "r2"]
    assert result.output == ["R1", "R2"]


async def test_turn_end_veto_withholds_the_answer_without_leaking_an_exception() -> None:
    rails = [rail("gag", ["turn_end"], veto("not for your eyes"))]
    result = await run_one([Agent("a")], lambda: agent("a", "x"), ScriptedModel(["a"]), rails=rails)
    assert (result.output.text, result.output.reason) == ("", "vetoed by a rail")
    assert of_type(result, "agent_finished")[0].produced_content is False
    _stopped_by_veto(result, "turn_end", "not for your eyes")


async def test_turn_end_veto_keeps_an_earlier_stop_reason() -> None:
    model = ScriptedModel([tool_call("list_files")])
    limited = Agent("a", tools=["list_files"], max_steps=1)
    rails = [rail("gag", ["turn_end"], veto("no"))]
    result = await run_one([limited], lambda: agent("a", "go"), model, rails=rails)
    assert (result.output.reason, result.output.text) == ("step limit reached", "")
    assert [v.hook for v in of_type(result, "rail_vetoed")] == ["turn_end"]


# -- mistakes in a rail -----------------------------------------------------------------------


async def test_an_amend_of_the_wrong_type_is_a_clear_error() -> None:
    rails = [rail("sloppy", ["before_model_call"], lambda ctx: Amend("just a string"))]
    model = ScriptedModel([])
    result = await run_one([Agent("a")], lambda: _caught("a"), model, rails=rails)
    assert "rail 'sloppy' amended before_model_call with a str" in str(result.output)
    assert model.requests == []


async def test_a_rail_answering_something_else_is_a_clear_error() -> None:
    rails = [rail("chatty", ["turn_start"], lambda ctx: "sure")]
    result = await run_one([Agent("a")], lambda: _caught("a"), ScriptedModel([]), rails=rails)
    assert "expected Veto, Amend or None" in str(result.output)


def test_every_hook_has_a_documented_amend_type() -> None:
    from swarmflow.runtime.rails import AMENDS

    assert set(AMENDS) == set(Hook)
    assert AMENDS[Hook.AFTER_MODEL_CALL] is ModelResponse


@pytest.mark.parametrize("hook", [h.value for h in Hook if h is not Hook.ON_ERROR])
async def test_a_rail_that_raises_ends_the_session_in_error_at_any_hook(
    hook: str, tmp_path: Path
) -> None:
    def broken(ctx: RailContext) -> None:
        raise ValueError(f"rail bug at {ctx.hook.value}")

    model = ScriptedModel([tool_call("read_file", path="f.txt"), "done"])
    (tmp_path / "f.txt").write_text("x")
    reader = Agent("a", tools=["read_file"], workspace="local")
    rails = [rail("buggy", [hook], broken)]
    result = await run_one([reader], lambda: _caught("a"), model, rails=rails, repo=tmp_path)
    failed: AgentFailed = result.output
    assert isinstance(failed.__cause__, ValueError)
    assert f"rail bug at {hook}" in str(failed)
    ended = of_type(result, "session_ended")
    assert [e.state for e in ended] == ["error"]
