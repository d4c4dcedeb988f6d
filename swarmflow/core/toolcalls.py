"""The one path a tool call takes: the schema the model sees, argument parsing, invocation.

The session's tool runner and `ToolRegistry.execute` both go through these functions, so what
the tests exercise is what production runs. Convention: a tool signals failure by raising
`ToolError`; `invoke` turns that, and any unexpected exception, into `ToolResult(ok=False)`,
whose text is the observation the model sees next. Cancellation is never caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from swarmflow.core.errors import SwarmflowError, ToolError
from swarmflow.core.messages import ToolSpec, decode_arguments
from swarmflow.core.ports import Tool, ToolContext, ToolResult


def tool_spec(tool: Tool) -> ToolSpec:
    """The tool as the model sees it, its schema cleaned of pydantic's titles."""
    schema = strip_titles(tool.args.model_json_schema())
    return ToolSpec(name=tool.name, description=tool.description, parameters=schema)


def strip_titles(schema: Any) -> Any:
    """A copy of a JSON schema without `title` keys (field names under `properties` stay).

    Titles repeat the field names in pydantic's capitalisation: tokens for nothing, in every
    request.
    """
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


def parse_args(tool: Tool, raw: str | Mapping[str, object]) -> BaseModel:
    """The tool's argument model from the model's JSON; ToolError naming tool and fields."""
    try:
        data = decode_arguments(tool.name, raw) if isinstance(raw, str) else dict(raw)
    except ValueError as exc:
        raise ToolError(f"{exc}. Send the call again with a valid JSON object.") from None
    return validate_args(tool, data)


def validate_args(tool: Tool, data: object) -> BaseModel:
    """`data` (a mapping or another pydantic model) as the tool's own argument model."""
    if isinstance(data, tool.args):
        return data
    if isinstance(data, BaseModel):
        data = data.model_dump()
    try:
        return tool.args.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(err) for err in exc.errors())
        fields = tool.args.model_fields or tool.args.model_json_schema().get("properties", {})
        expected = ", ".join(fields) or "none"
        raise ToolError(
            f"invalid arguments for tool {tool.name!r}: {problems} (expected fields: {expected})"
        ) from None


def _describe(err: ErrorDetails) -> str:
    """One pydantic error as `field 'x': message`."""
    where = ".".join(str(part) for part in err.get("loc", ())) or "(arguments)"
    return f"field {where!r}: {err.get('msg', 'invalid')}"


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """How one tool is run: a time limit per attempt, an output cap and retries.

    Declared where the tool is given to an agent (a `policy` attribute on the tool object);
    the built-in tools carry none and keep their own limits.
    """

    timeout: float | None = 60.0
    """Seconds one attempt may take; the attempt then fails with a timeout observation."""
    max_output: int | None = 16_000
    """Characters of the result the model sees; the rest is cut with a note saying so."""
    retries: int = 0
    """Further attempts after a timeout or an unexpected exception (not after a ToolError,
    which is the tool's considered answer)."""

    def __post_init__(self) -> None:
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"tool timeout must be positive seconds, got {self.timeout!r}")
        if self.max_output is not None and self.max_output < 1:
            raise ValueError(f"max_output must be at least 1, got {self.max_output!r}")
        if self.retries < 0:
            raise ValueError(f"retries cannot be negative, got {self.retries!r}")


class _Transient(Exception):
    """An attempt that may be retried: it timed out or the tool broke unexpectedly."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


async def invoke(tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolResult:
    """Run `tool` on parsed arguments; every failure comes back as an `ok=False` result."""
    if tool.needs_workspace and ctx.workspace is None:
        return ToolResult(
            f"tool {tool.name!r} needs a workspace, but agent {ctx.agent!r} has none "
            "(it was declared with workspace='none')",
            ok=False,
        )
    policy: ToolPolicy | None = getattr(tool, "policy", None)
    if policy is None:
        return await _attempt(tool, args, ctx)
    failure = ""
    for attempt in range(policy.retries + 1):
        try:
            result = await _attempt(tool, args, ctx, policy.timeout, transient=True)
        except _Transient as exc:
            failure = exc.text + (f" (attempt {attempt + 1} of {policy.retries + 1})")
            continue
        return _capped(result, policy.max_output)
    return ToolResult(failure, ok=False)


def _capped(result: ToolResult, limit: int | None) -> ToolResult:
    """`result` with its text cut to `limit` characters, saying how much was cut."""
    if limit is None or len(result.text) <= limit:
        return result
    cut = len(result.text) - limit
    text = f"{result.text[:limit]}\n... [output cut: {cut} more characters]"
    return ToolResult(text, ok=result.ok, submitted=result.submitted, value=result.value)


async def _attempt(
    tool: Tool,
    args: BaseModel,
    ctx: ToolContext,
    timeout: float | None = None,
    *,
    transient: bool = False,
) -> ToolResult:
    """One run of the tool; with `transient`, timeouts and crashes raise `_Transient`."""
    try:
        with anyio.move_on_after(timeout):
            return await tool.run(args, ctx)
        raise _Transient(f"tool {tool.name!r} timed out after {timeout}s")
    except _Transient:
        raise
    except ToolError as exc:
        return ToolResult(exc.message, ok=False)
    except SwarmflowError as exc:
        return ToolResult(f"{type(exc).__name__}: {exc}", ok=False)
    except Exception as exc:  # a broken tool is the tool's fault, not the run's
        text = f"internal error in tool {tool.name}: {type(exc).__name__}: {exc}"
        if transient:
            raise _Transient(text) from None
        return ToolResult(text, ok=False)


async def execute(tool: Tool, raw: str | Mapping[str, object], ctx: ToolContext) -> ToolResult:
    """Parse and run one call, as the session does without rails; never raises a tool fault."""
    try:
        args = parse_args(tool, raw)
    except ToolError as exc:
        return ToolResult(exc.message, ok=False)
    return await invoke(tool, args, ctx)
