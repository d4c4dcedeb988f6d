"""The tool registry: tools by name, and the built-in set.

Schemas, argument parsing and execution are `swarmflow.core.toolcalls`, the one path a tool
call takes whether a session or `ToolRegistry.execute` makes it. Convention: tools signal
failure by raising `ToolError` (a missing file, a path escaping the workspace, an `edit` whose
text is not unique); the call comes back as `ToolResult(ok=False, text=...)`, the observation
the model sees next. A shell command that exits non-zero is not a failure; its exit code is
part of the text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping

from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import ToolSpec
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.core.toolcalls import execute, tool_spec
from swarmflow.tools.board_tools import CreateThread, SendMessage, WaitForMention
from swarmflow.tools.control import MessageAgent, Submit
from swarmflow.tools.files import Edit, ReadFile, WriteFile
from swarmflow.tools.reservations import Release, Reserve
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
        self, name: str, raw_args: str | Mapping[str, object], ctx: ToolContext
    ) -> ToolResult:
        """Parse and run one call; every failure comes back as an `ok=False` result."""
        if name not in self._tools:
            return ToolResult(unknown_tool_message(name, self._tools), ok=False)
        return await execute(self._tools[name], raw_args, ctx)


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
        CreateThread(),
        SendMessage(),
        WaitForMention(),
        Reserve(),
        Release(),
    ]
    return ToolRegistry(builtins)
