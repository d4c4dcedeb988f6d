"""`@tool`: a plain Python function, sync or async, as a tool an agent can call.

The function's type hints become the argument model (pydantic), so the model sees a JSON schema
and its arguments are validated before the function runs, on the same path as the built-ins
(`swarmflow.core.toolcalls`). The docstring's first paragraph is the description; an `Args:`
section (or `:param x:` lines) describes each argument. A first parameter annotated
`ToolCallContext` receives the caller: the agent's name, its workspace (with the built-ins' path
rules) and the run's budget snapshot.

Sync functions run in a daemon thread of their own. A cancellation or deadline abandons the
thread: the run goes on at once, the thread's eventual result is dropped (Python cannot kill a
thread), and a thread still stuck when the run ends does not keep the process from exiting.

A function that calls `sys.exit()` (raises SystemExit) fails that one call: the model is told
and the run goes on. A KeyboardInterrupt from a function stops the run as Ctrl-C does: Ctrl-C
reaches a run as SIGINT (anyio turns it into a cancellation of the run), never as an exception
inside one of its tools, so the tool raises SIGINT.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Generic, ParamSpec, TypeVar, get_type_hints, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from swarmflow.core.budget import BudgetSnapshot
from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.core.toolcalls import ToolPolicy
from swarmflow.tools.access import read_text, write_text
from swarmflow.tools.base import resolve_path
from swarmflow.tools.daemon_thread import run_in_daemon_thread

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)  # a FunctionTool[..., object] takes any tool

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What model APIs accept as a tool name."""


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """What a `@tool` function sees of its caller when its first parameter asks for it."""

    agent: str
    """The calling agent's name."""
    session: str
    """The calling session's id."""
    tool: str
    """The tool's own name (it appears in path errors)."""
    budget: BudgetSnapshot | None
    """The run's `BudgetSnapshot` when the call started (None outside a run)."""
    _ctx: ToolContext = field(repr=False)

    @property
    def workspace(self) -> Path | None:
        """The root of the agent's workspace; None when the agent has none."""
        space = self._ctx.workspace
        return space.root if space is not None else None

    def path(self, relative: str) -> Path:
        """`relative` inside the workspace, refused as the built-ins refuse it (absolute paths,
        `..`, symlinks leading out, the run's records); ToolError when the agent has no
        workspace."""
        if self.workspace is None:
            raise ToolError(f"tool {self.tool!r} needs a workspace, but {self.agent} has none")
        return resolve_path(self._ctx, self.tool, relative)

    async def read_text(self, relative: str) -> str:
        """A text file of the workspace, read as `read_file` reads it (shared workspaces
        record the version this agent saw)."""
        return await read_text(self._ctx, self.tool, relative)

    async def write_text(self, relative: str, content: str) -> None:
        """Write a text file of the workspace as `write_file` does."""
        await write_text(self._ctx, self.tool, relative, content)


@dataclass(frozen=True)
class FunctionTool(Generic[P, R_co]):
    """A function wrapped as a tool. Calling the object calls the function."""

    fn: Callable[P, R_co]
    name: str
    description: str
    args: type[BaseModel]
    wants_context: bool
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    needs_workspace: bool = False

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self.fn(*args, **kwargs)

    def with_policy(self, policy: ToolPolicy) -> FunctionTool[P, R_co]:
        """The same tool run under `policy`."""
        return dataclasses.replace(self, policy=policy)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Call the function with validated arguments and render what it returns."""
        if not isinstance(args, self.args):
            args = self.args.model_validate(args.model_dump())
        kwargs = {name: getattr(args, name) for name in self.args.model_fields}
        call_args: tuple[ToolCallContext, ...] = (self._context(ctx),) if self.wants_context else ()
        fn: Callable[..., object] = self.fn  # called with what the model sent, validated
        value: object
        try:
            if inspect.iscoroutinefunction(fn):
                value = await fn(*call_args, **kwargs)
            else:
                work = partial(fn, *call_args, **kwargs)
                value = await run_in_daemon_thread(work, self.name)
        except SystemExit as exc:  # the tool's exit, not the process's: one failed call
            raise ToolError(
                f"tool {self.name!r} called sys.exit({exc.code!r}); the call failed"
            ) from None
        except KeyboardInterrupt:
            signal.raise_signal(signal.SIGINT)  # the run stops as Ctrl-C stops it
            raise ToolError(f"tool {self.name!r} raised KeyboardInterrupt") from None
        return render(value)

    def _context(self, ctx: ToolContext) -> ToolCallContext:
        budget = ctx.budget() if ctx.budget is not None else None
        return ToolCallContext(ctx.agent, ctx.session, self.name, budget, ctx)


def render(value: object) -> ToolResult:
    """What the model sees of a return value: a str as is, models and containers as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value, value=value)
    if value is None:
        return ToolResult("(the tool returned nothing)", value=None)
    if isinstance(value, BaseModel):
        return ToolResult(value.model_dump_json(), value=value)
    try:
        text = pydantic_core.to_json(value).decode("utf-8")
    except pydantic_core.PydanticSerializationError:
        text = str(value)
    return ToolResult(text, value=value)


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = ...,
    max_output: int | None = ...,
    retries: int = ...,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    **policy: Any,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make `fn` a tool: `@tool` or `@tool(name=..., timeout=5, max_output=4000, retries=1)`.

    Raises:
        ConfigError: a parameter without a type hint, `*args`, a bad tool name.
    """

    def wrap(target: Callable[P, R]) -> FunctionTool[P, R]:
        return function_tool(target, name=name, description=description, **policy)

    return wrap if fn is None else wrap(fn)


def function_tool(
    fn: Callable[P, R] | FunctionTool[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    **policy: Any,
) -> FunctionTool[P, R]:
    """The tool for `fn` (what `@tool` does)."""
    if isinstance(fn, FunctionTool):
        fn = fn.fn
    if not callable(fn):
        raise ConfigError(f"@tool needs a function, got {fn!r}")
    tool_name = str(name or getattr(fn, "__name__", ""))
    if not TOOL_NAME.match(tool_name):
        raise ConfigError(
            f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-' (give name=...)"
        )
    summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
    args, wants_context = _arguments(fn, tool_name, arg_docs)
    try:
        chosen = ToolPolicy(**policy)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"tool {tool_name!r}: {exc}") from None
    return FunctionTool(
        fn=fn,
        name=tool_name,
        description=description or summary or f"Call {tool_name}.",
        args=args,
        wants_context=wants_context,
        policy=chosen,
    )


def _arguments(
    fn: Callable[..., object], tool_name: str, docs: dict[str, str]
) -> tuple[type[BaseModel], bool]:
    """The argument model from `fn`'s signature, and whether its first parameter is a context."""
    params = list(inspect.signature(fn).parameters.values())
    try:
        hints = get_type_hints(fn)
    except (NameError, TypeError) as exc:
        raise ConfigError(f"tool {tool_name!r}: cannot read its type hints: {exc}") from None
    wants_context = bool(params) and hints.get(params[0].name) is ToolCallContext
    fields: dict[str, Any] = {}
    for param in params[1:] if wants_context else params:
        fields[param.name] = _field(param, hints, tool_name, docs)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    model_name = "".join(part.title() for part in tool_name.replace("-", "_").split("_")) + "Args"
    return create_model(model_name, __config__=config, **fields), wants_context


def _field(
    param: inspect.Parameter, hints: dict[str, Any], tool_name: str, docs: dict[str, str]
) -> tuple[Any, FieldInfo]:
    where = f"tool {tool_name!r}, parameter {param.name!r}"
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        raise ConfigError(f"{where}: *args and **kwargs cannot be described to a model")
    if param.kind is param.POSITIONAL_ONLY:
        raise ConfigError(f"{where}: positional-only parameters cannot be passed by name")
    if param.name not in hints:
        raise ConfigError(f"{where} needs a type hint (it becomes the argument's schema)")
    if hints[param.name] is ToolCallContext:
        raise ConfigError(f"{where}: the ToolCallContext must be the first parameter")
    default = ... if param.default is param.empty else param.default
    return hints[param.name], Field(default, description=docs.get(param.name))


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params"})
_ARG_LINE = re.compile(r"^(\s*)\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")


@dataclass
class _DocReader:
    """Reads a docstring line by line (Google `Args:` sections and Sphinx `:param x:`)."""

    summary: list[str] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)
    section: str | None = None
    current: str | None = None
    indent: int = 0

    def feed(self, line: str) -> None:
        heading = _SECTION.match(line.strip())
        sphinx = _SPHINX.match(line)
        if heading:
            self.section, self.current = heading.group(1), None
        elif sphinx:
            self.section, self.current, self.indent = "Args", sphinx.group(1), 1 << 30
            self.args[self.current] = sphinx.group(2).strip()
        elif line.strip().startswith(":"):
            self.section, self.current = "other", None
        elif self.section is None:
            self.summary.append(line)
        elif self.section in _ARG_SECTIONS:
            self._arg_line(line)

    def _arg_line(self, line: str) -> None:
        match = _ARG_LINE.match(line)
        if match and (self.current is None or len(match.group(1)) <= self.indent):
            self.current, self.indent = match.group(2), len(match.group(1))
            self.args[self.current] = match.group(3).strip()
        elif self.current is not None and line.strip():
            self.args[self.current] = f"{self.args[self.current]} {line.strip()}".strip()


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and each argument's description, from
    a Google-style `Args:` section or Sphinx `:param x:` lines."""
    reader = _DocReader()
    for line in doc.splitlines():
        reader.feed(line)
    described = {name: text for name, text in reader.args.items() if text}
    return "\n".join(reader.summary).strip(), described


def is_tool_function(value: object) -> bool:
    """Whether `value` is a `@tool` (what `use x from module` may bring in as a tool)."""
    return isinstance(value, FunctionTool)
