"""`tool_policy`: a tool's timeout, output cap and retries, declared where it is given.

`Agent("a", tools=[tool_policy(lookup, timeout=5, max_output=4000, retries=1)])`. Fields left
out keep the tool's current policy (for a tool without one, the defaults of `ToolPolicy`, the
limits the built-in shell tool uses). The policy is applied by `swarmflow.core.toolcalls.invoke`,
the path every tool call takes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from swarmflow.core.errors import ConfigError
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.core.toolcalls import ToolPolicy

_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class PolicedTool:
    """Another tool (a built-in, say) run under a policy of its own."""

    inner: Tool
    policy: ToolPolicy

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def args(self) -> type[BaseModel]:
        return self.inner.args

    @property
    def needs_workspace(self) -> bool:
        return self.inner.needs_workspace

    def with_policy(self, policy: ToolPolicy) -> PolicedTool:
        return PolicedTool(self.inner, policy)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        return await self.inner.run(args, ctx)


def tool_policy(
    given: Any,
    *,
    timeout: float | None = _UNSET,
    max_output: int | None = _UNSET,
    retries: int = _UNSET,
) -> Any:
    """`given` (a tool or a tool server) with the named limits changed.

    Raises:
        ConfigError: `given` is not a tool object (a name cannot carry a policy: give the
            tool object, e.g. `swarmflow.tools.RunShell()`), or a limit is out of range.
    """
    current: ToolPolicy = getattr(given, "policy", None) or ToolPolicy()
    changes: dict[str, Any] = {
        key: value
        for key, value in (("timeout", timeout), ("max_output", max_output), ("retries", retries))
        if value is not _UNSET
    }
    try:
        policy = dataclasses.replace(current, **changes)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"tool_policy for {_label(given)}: {exc}") from None
    if hasattr(given, "with_policy"):
        return given.with_policy(policy)
    if isinstance(given, Tool):
        return PolicedTool(given, policy)
    raise ConfigError(
        f"tool_policy needs a tool object or a tool server, got {given!r}; for a built-in, "
        "give its object (swarmflow.tools.RunShell(), say)"
    )


def _label(given: object) -> str:
    return repr(getattr(given, "name", given))
