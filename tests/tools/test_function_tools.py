"""`@tool` functions through real runs: schemas, validation, context, sync/async, policy."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from swarmflow import Agent, ConfigError, Team, ToolCallContext, agent, flow, run, tool, tool_policy
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call


class Forecast(BaseModel):
    city: str
    high: int


@tool
def forecast(city: str, days: int = 1) -> Forecast:
    """Tomorrow's forecast for a city.

    Args:
        city: The city, as its English name.
        days: How many days ahead
            (1 is tomorrow).
    """
    return Forecast(city=city, high=20 + days)


@tool
async def shout(text: str) -> str:
    """Upper-case some text.

    :param text: what to shout
    """
    return text.upper()


@tool
def note(ctx: ToolCallContext, path: str, text: str) -> dict[str, Any]:
    """Write a note into the agent's workspace."""
    target = ctx.path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return {"agent": ctx.agent, "wrote": path, "calls_spent": ctx.budget.spent_calls}


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def observations(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def scripted(*calls: Any) -> Callable[[ModelRequest], Any]:
    """A policy that makes `calls` one per turn, then answers with the last observation."""
    pending = list(calls)

    def policy(request: ModelRequest) -> Any:
        if pending:
            return pending.pop(0)
        return observations(request)[-1] if observations(request) else "nothing"

    return policy


async def run_agent(
    analyst: Agent, policy: Callable[[ModelRequest], Any], **options: Any
) -> tuple[Any, FunctionModel]:
    model = FunctionModel(policy)

    @flow(team=Team([analyst]))
    async def f() -> Any:
        return await agent(analyst.name, "go")

    options.setdefault("raise_on_failure", False)
    return await run(f, model=model, **options), model


async def test_the_model_sees_the_schema_from_hints_and_docstring(tmp_path: Path) -> None:
    analyst = Agent("analyst", tools=[forecast, "read_file"], workspace="local")
    result, model = await run_agent(analyst, scripted(), repo=tmp_path)
    assert result.status == "ok"
    specs = {spec.name: spec for spec in model.requests[0].tools}
    assert list(specs) == ["forecast", "read_file"]
    spec = specs["forecast"]
    assert spec.description == "Tomorrow's forecast for a city."
    assert spec.parameters["required"] == ["city"]
    assert spec.parameters["properties"]["city"] == {
        "description": "The city, as its English name.",
        "type": "string",
    }
    assert (
        spec.parameters["properties"]["days"]["description"]
        == "How many days ahead (1 is tomorrow)."
    )
    assert spec.parameters["additionalProperties"] is False


async def test_a_sync_tool_runs_and_its_model_is_rendered_as_json() -> None:
    analyst = Agent("analyst", tools=[forecast])
    result, _ = await run_agent(analyst, scripted(tool_call("forecast", city="Oslo", days=2)))
    assert json.loads(result.output.text) == {"city": "Oslo", "high": 22}
    executed = [e for e in result.events if e.type == "tool_executed"]
    assert executed[0].ok and executed[0].arguments == {"city": "Oslo", "days": 2}


async def test_an_async_tool_runs_and_sphinx_params_are_described() -> None:
    analyst = Agent("analyst", tools=[shout])
    result, model = await run_agent(analyst, scripted(tool_call("shout", text="hi")))
    assert result.output.text == "HI"
    assert model.requests[0].tools[0].parameters["properties"]["text"]["description"] == (
        "what to shout"
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"city": "Oslo", "days": "many"}, "field 'days'"),
        ({"days": 2}, "field 'city': Field required"),
        ({"city": "Oslo", "smuggled": "rm -rf /"}, "field 'smuggled'"),
        ({"city": ["not", "a", "string"]}, "field 'city'"),
    ],
)
async def test_invalid_arguments_come_back_as_observations(
    arguments: dict[str, Any], expected: str
) -> None:
    calls: list[str] = []

    @tool
    def counted(city: str, days: int = 1) -> str:
        """Counts real calls."""
        calls.append(city)
        return "ran"

    analyst = Agent("analyst", tools=[counted])
    result, _ = await run_agent(analyst, scripted(tool_call("counted", **arguments)))
    assert result.status == "ok" and calls == []
    assert expected in result.output.text and "invalid arguments" in result.output.text
    executed = [e for e in result.events if e.type == "tool_executed"]
    assert executed and not executed[0].ok


async def test_context_gives_agent_workspace_and_budget(tmp_path: Path) -> None:
    analyst = Agent("analyst", tools=[note], workspace="local")
    result, model = await run_agent(
        analyst, scripted(tool_call("note", path="notes/a.txt", text="hello")), repo=tmp_path
    )
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello"
    assert json.loads(result.output.text) == {
        "agent": "analyst",
        "wrote": "notes/a.txt",
        "calls_spent": 1,
    }
    assert "ctx" not in model.requests[0].tools[0].parameters["properties"]


@pytest.mark.parametrize("hostile", ["../escape.txt", "/etc/passwd", "a/../../b"])
async def test_context_paths_follow_the_builtin_rules(tmp_path: Path, hostile: str) -> None:
    analyst = Agent("analyst", tools=[note], workspace="local")
    result, _ = await run_agent(
        analyst, scripted(tool_call("note", path=hostile, text="x")), repo=tmp_path
    )
    assert result.status == "ok"
    assert "refused" in result.output.text
    assert not (tmp_path.parent / "escape.txt").exists()


async def test_context_without_a_workspace_is_a_clear_observation() -> None:
    result, _ = await run_agent(
        Agent("analyst", tools=[note]), scripted(tool_call("note", path="a", text="x"))
    )
    assert "needs a workspace, but analyst has none" in result.output.text


async def test_a_tool_that_raises_is_an_observation_and_the_run_goes_on() -> None:
    analyst = Agent("analyst", tools=[explode, shout])
    result, _ = await run_agent(
        analyst, scripted(tool_call("explode", reason="x"), tool_call("shout", text="after"))
    )
    assert result.status == "ok" and result.output.text == "AFTER"
    executed = [e for e in result.events if e.type == "tool_executed"]
    assert not executed[0].ok
    assert "RuntimeError: boom: x" in executed[0].result


async def test_a_slow_sync_tool_is_abandoned_at_the_run_deadline() -> None:
    release = threading.Event()
    entered = threading.Event()

    @tool
    def stuck() -> str:
        """Blocks until released."""
        entered.set()
        release.wait()
        return "late"

    try:
        analyst = Agent("analyst", tools=[tool_policy(stuck, timeout=None)])
        result, _ = await run_agent(analyst, scripted(tool_call("stuck")), budget={"seconds": 0.5})
        assert entered.is_set()
        assert result.status == "failed"
        assert "wall-clock" in str(result.error)
    finally:
        release.set()


async def test_a_tool_timeout_is_an_observation_and_retries_are_counted() -> None:
    release = threading.Event()
    attempts: list[int] = []

    @tool
    def slow() -> str:
        """Blocks until released."""
        attempts.append(1)
        release.wait()
        return "late"

    try:
        analyst = Agent("analyst", tools=[tool_policy(slow, timeout=0.05, retries=1)])
        result, _ = await run_agent(analyst, scripted(tool_call("slow")))
        assert result.status == "ok"
        assert "timed out after 0.05s (attempt 2 of 2)" in result.output.text
        assert len(attempts) == 2
    finally:
        release.set()


async def test_output_cap_cuts_with_a_note() -> None:
    @tool(max_output=10)
    def long() -> str:
        """Returns a lot."""
        return "x" * 100

    result, _ = await run_agent(Agent("analyst", tools=[long]), scripted(tool_call("long")))
    assert result.output.text.startswith("x" * 10 + "\n... [output cut: 90 more characters]")


async def test_two_agents_may_give_one_tool_different_policies() -> None:
    @tool
    def text() -> str:
        """Returns twenty characters."""
        return "y" * 20

    short = Agent("short", tools=[tool_policy(text, max_output=5)])
    full = Agent("full", tools=[text])
    policies = {"short": scripted(tool_call("text")), "full": scripted(tool_call("text"))}
    model = FunctionModel(lambda request: policies[request.agent](request))

    @flow(team=Team([short, full]))
    async def f() -> Any:
        return [(await agent("short", "go")).text, (await agent("full", "go")).text]

    result = await run(f, model=model)
    assert result.output[0].startswith("yyyyy\n... [output cut")
    assert result.output[1] == "y" * 20


async def test_a_builtin_can_be_given_a_policy_by_object(tmp_path: Path) -> None:
    from swarmflow.tools import ReadFile

    (tmp_path / "big.txt").write_text("z" * 500)
    reader = Agent("reader", tools=[tool_policy(ReadFile(), max_output=40)], workspace="local")
    result, _ = await run_agent(
        reader, scripted(tool_call("read_file", path="big.txt")), repo=tmp_path
    )
    assert "[output cut:" in result.output.text


def test_declaration_errors_name_the_tool_and_parameter() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ConfigError, match=r"tool 'untyped', parameter 'x' needs a type hint"):
        tool(untyped)

    def star(*args: int) -> int:
        return 0

    with pytest.raises(ConfigError, match=r"\*args"):
        tool(star)
    with pytest.raises(ConfigError, match="tool name"):
        tool(name="bad name!")(shout.fn)
    with pytest.raises(ConfigError, match="retries cannot be negative"):
        tool_policy(shout, retries=-1)
    with pytest.raises(ConfigError, match="tool_policy needs a tool object"):
        tool_policy("read_file", timeout=3)
    with pytest.raises(ConfigError, match="tools takes names"):
        Agent("a", tools=[42])


def test_a_tool_object_stays_callable_and_agent_lists_its_name() -> None:
    assert forecast("Rome").high == 21
    analyst = Agent("analyst", tools=[forecast, "read_file", forecast])
    assert analyst.tools == ("forecast", "read_file")
    assert analyst.provided == (forecast,)


async def test_a_cancelled_run_does_not_wait_for_a_stuck_sync_tool() -> None:
    release = threading.Event()
    entered = anyio.Event()
    token = anyio.lowlevel.current_token()

    @tool
    def stuck() -> str:
        """Blocks until released."""
        anyio.from_thread.run_sync(entered.set, token=token)
        release.wait()
        return "late"

    analyst = Agent("analyst", tools=[tool_policy(stuck, timeout=None)])
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run_agent, analyst, scripted(tool_call("stuck")))
            await entered.wait()
            group.cancel_scope.cancel()
        assert not release.is_set()
    finally:
        release.set()
