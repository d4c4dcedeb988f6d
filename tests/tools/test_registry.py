"""The registry and the one tool-call path, tested as the model sees it: through real runs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from swarmflow import Agent, agent
from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.core.messages import ModelRequest, ModelResponse, ToolCall, ToolSpec
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.core.toolcalls import strip_titles
from swarmflow.testing import FunctionModel, ScriptedModel, tool_call
from swarmflow.tools import ArgsModel, ToolRegistry, default_registry, parse_args
from tests.runtime.helpers import of_type, run_one

from .conftest import make_ctx

BUILTINS = [
    "create_thread",
    "edit",
    "list_files",
    "message_agent",
    "read_file",
    "release",
    "reserve",
    "run_shell",
    "search",
    "send_message",
    "submit",
    "wait_for_mention",
    "write_file",
]


class Boom:
    """A tool that fails in an unexpected way."""

    name = "boom"
    description = "Always breaks."
    args: type[BaseModel] = ArgsModel
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("kaput")


class Inner(ArgsModel):
    title: str = Field(description="A field that is called title.")


class NestedArgs(ArgsModel):
    item: Inner = Field(description="A nested model (its schema lands in $defs).")
    count: int = Field(default=1, description="How many.")


class Nested:
    """A tool whose schema has a nested model and a field named `title`."""

    name = "nested"
    description = "Takes a nested object."
    args: type[BaseModel] = NestedArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"got {args.model_dump()}")


def test_default_registry_holds_fresh_builtins() -> None:
    first, second = default_registry(), default_registry()
    assert first.names() == BUILTINS
    assert first.get("edit") is not second.get("edit")
    assert all(isinstance(tool, Tool) for tool in first)
    assert "edit" in first and "nope" not in first


def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'read_file'"):
        default_registry().get("read_fle")


def test_duplicate_registration_needs_replace() -> None:
    registry = default_registry()
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(registry.get("submit"))
    registry.register(registry.get("submit"), replace=True)


def _titles(schema: Any, under_properties: bool = False) -> list[str]:
    """Every `title` key in a schema that is a pydantic title, not a field named title."""
    found: list[str] = []
    if isinstance(schema, list):
        for item in schema:
            found += _titles(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key == "title" and not under_properties:
                found.append(str(value))
            found += _titles(value, under_properties=key in ("properties", "$defs"))
    return found


def _check_schema(spec: ToolSpec) -> None:
    """The shape a chat-completions endpoint expects for `parameters`, without titles."""
    schema = spec.parameters
    assert schema["type"] == "object", spec.name
    assert schema["additionalProperties"] is False, spec.name
    assert _titles(schema) == [], spec.name
    for name, prop in schema["properties"].items():
        assert prop.get("description"), (spec.name, name)
    assert set(schema.get("required", [])) <= set(schema["properties"])


async def test_the_schemas_sent_to_the_model_have_no_titles() -> None:
    seen: list[ModelRequest] = []

    def policy(request: ModelRequest) -> str:
        seen.append(request)
        return "done"

    registry = default_registry()
    registry.register(Nested())
    everything = Agent("a", tools=[*BUILTINS, "nested"])
    await run_one([everything], lambda: agent("a", "go"), FunctionModel(policy), tools=registry)
    sent = {spec.name: spec for spec in seen[0].tools}
    assert sorted(sent) == sorted([*BUILTINS, "nested"])
    for spec in sent.values():
        assert spec.description
        _check_schema(spec)
    assert sent["edit"].parameters["required"] == ["path", "old", "new"]
    nested = sent["nested"].parameters
    assert nested["$defs"]["Inner"]["properties"]["title"]["type"] == "string"
    assert "title" not in nested["$defs"]["Inner"]


def test_strip_titles_keeps_fields_named_title() -> None:
    schema = {"title": "X", "properties": {"title": {"title": "Title", "type": "string"}}}
    assert strip_titles(schema) == {"properties": {"title": {"type": "string"}}}


def _raw(name: str, arguments: str) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id="c1", name=name, arguments=arguments),))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"path": "a.py", "old": ', "arguments of tool 'read_file' are not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"path": "a", "offset": "first", "colour": 1}', "field 'offset'"),
        ('{"path": "a", "offset": "first", "colour": 1}', "field 'colour'"),
        ("", "field 'path': Field required"),
    ],
)
async def test_broken_arguments_reach_the_model_as_an_observation(
    arguments: str, expected: str
) -> None:
    model = ScriptedModel([_raw("read_file", arguments), "giving up"])
    reader = Agent("a", tools=["read_file"])
    result = await run_one([reader], lambda: agent("a", "go"), model)
    executed = of_type(result, "tool_executed")[0]
    assert not executed.ok and expected in executed.result
    observation = model.requests[1].messages[-1]
    assert observation.role == "tool" and expected in (observation.content or "")
    assert "'read_file'" in (observation.content or "")


def test_parse_args_is_the_same_check() -> None:
    tool = default_registry().get("read_file")
    with pytest.raises(ToolError, match="field 'offset'"):
        parse_args(tool, '{"path": "a", "offset": "first"}')
    assert parse_args(tool, {"path": "a"}).model_dump()["path"] == "a"


async def test_a_crashing_tool_is_an_observation_in_a_run() -> None:
    registry = default_registry()
    registry.register(Boom())
    model = ScriptedModel([tool_call("boom"), "ok"])
    result = await run_one(
        [Agent("a", tools=["boom"])], lambda: agent("a", "go"), model, tools=registry
    )
    assert result.status == "ok"
    executed = of_type(result, "tool_executed")[0]
    assert executed.result == "internal error in tool boom: RuntimeError: kaput"
    assert model.requests[1].messages[-1].content == executed.result


async def test_execute_takes_the_same_path_and_never_raises() -> None:
    registry = ToolRegistry([Boom()])
    ctx = make_ctx(None)
    crashed = await registry.execute("boom", "{}", ctx)
    assert not crashed.ok
    assert crashed.text == "internal error in tool boom: RuntimeError: kaput"
    unknown = await registry.execute("bom", "{}", ctx)
    assert not unknown.ok
    assert "did you mean 'boom'" in unknown.text
    broken = await default_registry().execute("submit", "{", ctx)
    assert not broken.ok
    assert "not valid JSON" in broken.text


async def test_submit_ends_the_session() -> None:
    result = await default_registry().execute("submit", {"summary": "fixed it"}, make_ctx(None))
    assert result.submitted
    assert result.value == "fixed it"


async def test_message_agent_uses_the_session_messenger() -> None:
    registry = default_registry()
    alone = await registry.execute("message_agent", {"to": "b", "text": "hi"}, make_ctx(None))
    assert not alone.ok

    async def messenger(to: str, text: str) -> str:
        return f"{to} got {text}"

    ctx = make_ctx(None)
    ctx.message_agent = messenger
    result = await registry.execute("message_agent", {"to": "b", "text": "hi"}, ctx)
    assert result.text == "b got hi"
