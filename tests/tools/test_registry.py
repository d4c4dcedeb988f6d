"""The registry: lookup, schemas, argument parsing and failure handling."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.tools import ArgsModel, ToolRegistry, default_registry, parse_args
from swarmflow.tools.registry import strip_titles

from .conftest import make_ctx

BUILTINS = [
    "edit",
    "list_files",
    "message_agent",
    "read_file",
    "run_shell",
    "search",
    "submit",
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


def _check_schema(schema: dict[str, Any]) -> None:
    """The shape a chat-completions endpoint expects for `parameters`."""
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert "title" not in str(strip_titles(schema))
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name
    assert set(schema.get("required", [])) <= set(schema["properties"])


def test_specs_are_valid_schemas() -> None:
    registry = default_registry()
    specs = registry.specs(["edit", "read_file"])
    assert [s.name for s in specs] == ["edit", "read_file"]
    assert specs[0].parameters["required"] == ["path", "old", "new"]
    for spec in registry.specs():
        assert spec.description
        _check_schema(spec.parameters)
        assert "title" not in spec.parameters


def test_strip_titles_keeps_fields_named_title() -> None:
    schema = {"title": "X", "properties": {"title": {"title": "Title", "type": "string"}}}
    assert strip_titles(schema) == {"properties": {"title": {"type": "string"}}}


def test_broken_json_gives_a_readable_error() -> None:
    tool = default_registry().get("edit")
    with pytest.raises(ToolError, match=r"arguments of tool 'edit' are not valid JSON"):
        parse_args(tool, '{"path": "a.py", "old": ')
    with pytest.raises(ToolError, match="must be a JSON object"):
        parse_args(tool, "[1, 2]")


def test_schema_violations_name_the_tool_and_field() -> None:
    tool = default_registry().get("read_file")
    with pytest.raises(ToolError) as info:
        parse_args(tool, '{"path": "a", "offset": "first", "colour": 1}')
    message = info.value.message
    assert "'read_file'" in message
    assert "field 'offset'" in message
    assert "field 'colour'" in message
    with pytest.raises(ToolError, match="field 'path': Field required"):
        parse_args(tool, "")


async def test_execute_never_raises() -> None:
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
