"""The tool registry: lookup, JSON schemas for the model, argument parsing and safe execution.

Convention: tools signal failure by raising `ToolError` (a missing file, a path escaping the
workspace, an `edit` whose text is not unique, broken arguments). `ToolRegistry.execute` turns
those, and any unexpected exception, into `ToolResult(ok=False, text=...)`, so a tool call never
crashes a session: the text is the observation the model sees next. A shell command that exits
non-zero is not a failure; its exit code is part of the text.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.core.messages import ToolSpec
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.tools.control import MessageAgent, Submit
from swarmflow.tools.files import Edit, ReadFile, WriteFile
from swarmflow.tools.search import ListFiles, Search
from swarmflow.tools.shell import RunShell


class ToolRegistry:
    """Tools by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        """Add `tool`; a second tool with the same name needs `replace=True`."""
        if tool.name in self._tools and not replace:
            raise ConfigError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        """The tool called `name`; ConfigError with a suggestion when there is none."""
        try:
            return self._tools[name]
        except KeyError:
            raise ConfigError(unknown_tool_message(name, self._tools)) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        """What the model is shown for `names` (default: every tool), in the order given."""
        chosen = self.names() if names is None else list(names)
        return [tool_spec(self.get(name)) for name in chosen]

    async def execute(
        self, name: str, raw_args: str | Mapping[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """Parse and run one call; every failure comes back as an `ok=False` result."""
        if name not in self._tools:
            return ToolResult(unknown_tool_message(name, self._tools), ok=False)
        tool = self._tools[name]
        try:
            return await _run(tool, raw_args, ctx)
        except ToolError as exc:
            return ToolResult(exc.message, ok=False)
        except Exception as exc:
            return ToolResult(
                f"internal error in tool {name}: {type(exc).__name__}: {exc}", ok=False
            )


async def _run(tool: Tool, raw_args: str | Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """Parse the arguments, check the workspace and run the tool."""
    args = parse_args(tool, raw_args)
    if tool.needs_workspace and ctx.workspace is None:
        raise ToolError(f"tool {tool.name!r} needs a workspace, but this agent has none")
    return await tool.run(args, ctx)


def parse_args(tool: Tool, raw: str | Mapping[str, Any]) -> BaseModel:
    """The tool's argument model from the model's JSON; ToolError naming tool and field."""
    data = _decode(tool.name, raw) if isinstance(raw, str) else dict(raw)
    try:
        return tool.args.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(err) for err in exc.errors())
        expected = ", ".join(tool.args.model_fields)
        raise ToolError(
            f"invalid arguments for tool {tool.name!r}: {problems} (expected fields: {expected})"
        ) from None


def _decode(name: str, raw: str) -> dict[str, Any]:
    """The JSON object in `raw` (empty means no arguments)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"arguments of tool {name!r} are not valid JSON: {exc.msg} at position {exc.pos}: "
            f"{raw[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise ToolError(f"arguments of tool {name!r} must be a JSON object, got {raw[:200]!r}")
    return value


def _describe(err: Mapping[str, Any]) -> str:
    """One pydantic error as `field 'x': message`."""
    where = ".".join(str(part) for part in err.get("loc", ())) or "(arguments)"
    return f"field {where!r}: {err.get('msg', 'invalid')}"


def tool_spec(tool: Tool) -> ToolSpec:
    """The tool as the model sees it, its schema cleaned of pydantic's titles."""
    schema = strip_titles(tool.args.model_json_schema())
    return ToolSpec(name=tool.name, description=tool.description, parameters=schema)


def strip_titles(schema: Any) -> Any:
    """A copy of a JSON schema without `title` keys (field names under `properties` stay)."""
    if isinstance(schema, list):
        return [strip_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: strip_titles(sub) for name, sub in value.items()}
        elif key != "title":
            out[key] = strip_titles(value)
    return out


def unknown_tool_message(name: str, known: Iterable[str]) -> str:
    """`unknown tool 'x'`, with the closest known name when one is close."""
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown tool {name!r}{hint} (known: {', '.join(names) or 'none'})"


def default_registry() -> ToolRegistry:
    """A fresh registry holding every built-in tool."""
    builtins: list[Tool] = [
        ReadFile(),
        WriteFile(),
        Edit(),
        ListFiles(),
        Search(),
        RunShell(),
        Submit(),
        MessageAgent(),
    ]
    return ToolRegistry(builtins)
