"""Tools from Model Context Protocol servers, through the official `mcp` SDK (`swarmflow[mcp]`).

`mcp_stdio("python", "-m", "my_server")` and `mcp_http("http://127.0.0.1:8000/mcp")` are tool
providers: give one to an agent (`Agent("dev", tools=[server])`) and the run starts the server
(or connects to it) when it starts, lists its tools with their JSON schemas, and stops it when
the run ends, also on failure and cancellation. Each server tool is an ordinary tool: its
calls take the one tool-call path (gating, rails, events, policy), its arguments are checked
against the server's schema before they are sent, and a server error or a server that dies
mid-call comes back to the model as a `ToolServerError` observation; the run goes on. A tool
whose schema cannot be used (`mcp_schema`) is unusable, and only that tool. On Linux a stdio
server runs under `subreaper`, so every process it starts dies when it stops.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pydantic_core
from pydantic import BaseModel

from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.core.toolcalls import ToolPolicy
from swarmflow.tools import subreaper
from swarmflow.tools.mcp_schema import args_model, checked_schema, unusable_args
from swarmflow.tools.supervisor import supervised

if TYPE_CHECKING:
    from anyio.abc import TaskStatus
    from mcp import ClientSession, StdioServerParameters
    from mcp.types import Tool as McpToolSpec

log = logging.getLogger(__name__)

STARTUP_TIMEOUT = 30.0
"""Seconds a server may take to start and list its tools."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class ToolServerError(ToolError):
    """An MCP server failed a call: it answered with an error, or it went away mid-call."""


@dataclass(frozen=True, slots=True)
class McpServer:
    """A tool provider backed by an MCP server (make one with `mcp_stdio` or `mcp_http`)."""

    name: str
    """How the server is named in errors: its command line or URL."""
    transport: tuple[str, Any]
    """("stdio", StdioServerParameters) or ("http", (url, headers))."""
    prefix: str = ""
    """Put before each tool's name (to keep two servers' tools apart)."""
    include: tuple[str, ...] | None = None
    """The server tools to offer (by the server's names); None offers all."""
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    startup_timeout: float = STARTUP_TIMEOUT

    def with_policy(self, policy: ToolPolicy) -> McpServer:
        """The same server, its tools run under `policy`."""
        return replace(self, policy=policy)

    def open(self) -> AbstractAsyncContextManager[Sequence[Tool]]:
        """Start (or connect to) the server; yields its tools; stops it on exit."""
        return self._session()

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Sequence[Tool]]:
        # The connection lives in a task of its own: when the server dies, the SDK's transport
        # fails its own task group, and that must end the connection, not the caller's flow.
        link = _Link(self.name)
        try:
            async with anyio.create_task_group() as group:
                tools: list[Tool] = await group.start(self._hold, link)
                try:
                    yield tools
                finally:
                    link.closing.set()
        except Exception as exc:
            raise _sole(exc) from None  # what the flow raised, not a group around it

    async def _hold(self, link: _Link, *, task_status: TaskStatus[list[Tool]]) -> None:
        """Connect, hand the tools to the starter, then keep the connection until closing."""
        started = False
        try:
            async with AsyncExitStack() as stack:
                session = await self._start(stack)
                tools = await self._tools_or_config_error(session, link)
                task_status.started(tools)
                started = True
                await link.closing.wait()
        except Exception as exc:
            if not started:
                raise _sole(exc) from None
            link.lost(_reason(exc))
            if not link.closing.is_set():
                log.warning("MCP server %r went away: %s", self.name, _reason(exc))
        finally:
            link.lost("the connection was closed")

    async def _start(self, stack: AsyncExitStack) -> ClientSession:
        """A connected, initialised client session; a ConfigError saying why not."""
        from mcp import ClientSession

        try:
            read, write = await stack.enter_async_context(self._connect())
            session = await stack.enter_async_context(ClientSession(read, write))
            with anyio.fail_after(self.startup_timeout):
                await session.initialize()
            return session
        except Exception as exc:
            raise ConfigError(f"MCP server {self.name!r} could not start: {_reason(exc)}") from exc

    async def _tools_or_config_error(self, session: ClientSession, link: _Link) -> list[Tool]:
        try:
            with anyio.fail_after(self.startup_timeout):
                return await self._tools(session, link)
        except ConfigError as exc:
            raise ConfigError(f"MCP server {self.name!r}: {exc}") from None
        except Exception as exc:
            raise ConfigError(
                f"MCP server {self.name!r} could not list its tools: {_reason(exc)}"
            ) from exc

    def _connect(self) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        kind, target = self.transport
        if kind == "stdio":
            from mcp.client.stdio import stdio_client

            return stdio_client(under_subreaper(target))
        return _http_streams(*target)

    async def _tools(self, session: ClientSession, link: _Link) -> list[Tool]:
        from mcp.types import PaginatedRequestParams

        listed: list[McpToolSpec] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        wanted = set(self.include) if self.include is not None else None
        if wanted is not None and (missing := wanted - {t.name for t in listed}):
            have = ", ".join(sorted(t.name for t in listed)) or "none"
            raise ConfigError(f"the server has no tools named {sorted(missing)} (it has: {have})")
        return [
            self._tool(spec, session, link)
            for spec in listed
            if wanted is None or spec.name in wanted
        ]

    def _tool(self, spec: McpToolSpec, session: ClientSession, link: _Link) -> McpTool:
        """One server tool; one whose input schema cannot be used is offered as unusable."""
        description = spec.description or f"{spec.name} (from MCP server {self.name})"
        validator = checked_schema(spec.input_schema)
        if isinstance(validator, str):
            log.warning("MCP server %r: tool %r is unusable: %s", self.name, spec.name, validator)
            args = unusable_args(spec.name)
            description = f"(Unusable: {validator}.) {description}"
        else:
            args = args_model(spec.name, spec.input_schema, validator)
        return McpTool(
            name=_UNSAFE.sub("_", self.prefix + spec.name)[:64],
            remote=spec.name,
            description=description,
            args=args,
            server=self.name,
            session=session,
            link=link,
            policy=self.policy,
            unusable=validator if isinstance(validator, str) else None,
        )


def under_subreaper(params: StdioServerParameters) -> StdioServerParameters:
    """The server's parameters with its command run under `subreaper` (Linux), so every
    process it starts dies when it stops, `setsid` ones included. The command is looked up
    here, so a missing one is an error naming it, not a subreaper that exits at once."""
    if not subreaper.supported():
        return params  # the SDK's own process-group kill is all there is
    from mcp.client.stdio import get_default_environment

    env = get_default_environment() | (params.env or {})
    found = _executable(params.command, env.get("PATH"), params.cwd)
    argv = supervised([found, *params.args])
    return params.model_copy(update={"command": argv[0], "args": argv[1:]})


def _executable(command: str, path: str | None, cwd: str | Path | None) -> str:
    """The file `command` runs, as exec would find it (from `cwd` when it names a path)."""
    if os.sep in command:
        candidate = os.path.join(str(cwd or os.getcwd()), command)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    elif (found := shutil.which(command, path=path)) is not None:
        return found
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


@asynccontextmanager
async def _http_streams(url: str, headers: Mapping[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=dict(headers) or None) as client,
        streamable_http_client(url, http_client=client) as (read, write),
    ):
        yield read, write


class _Link:
    """The state of one server connection that its tools share: closing, or lost and why."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.closing = anyio.Event()
        self.gone: str | None = None
        self._calls: set[anyio.CancelScope] = set()

    def lost(self, reason: str) -> None:
        """The connection ended: calls in flight stop waiting for an answer."""
        if self.gone is None:
            self.gone = reason
        for scope in self._calls:
            scope.cancel()

    async def call(self, session: ClientSession, name: str, arguments: dict[str, object]) -> Any:
        """`session.call_tool`, ended early when the connection is lost."""
        if self.gone is None:
            with anyio.CancelScope() as scope:
                self._calls.add(scope)
                try:
                    return await session.call_tool(name, arguments)
                finally:
                    self._calls.discard(scope)
        raise ConnectionError(f"the server is gone ({self.gone})")


@dataclass(slots=True)
class McpTool:
    """One tool of a running MCP server."""

    name: str
    remote: str
    description: str
    args: type[BaseModel]
    server: str
    session: ClientSession = field(repr=False)
    link: _Link = field(repr=False)
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    needs_workspace: bool = False
    unusable: str | None = None
    """Why the tool cannot be called (its input schema cannot be used), or None."""

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Send the call to the server; its error, or its death, is a ToolServerError."""
        if self.unusable is not None:
            raise ToolServerError(
                f"ToolServerError: MCP tool {self.remote!r} of server {self.server!r} is "
                f"unusable: {self.unusable}. The call was not sent."
            )
        arguments = args.model_dump(mode="json", exclude_unset=True)
        try:
            result = await self.link.call(self.session, self.remote, arguments)
        except Exception as exc:
            raise ToolServerError(
                f"ToolServerError: MCP server {self.server!r} failed during the call to "
                f"{self.remote!r}: "
                f"{_reason(exc)}"
            ) from None
        text = render_content(result)
        if result.is_error:
            raise ToolServerError(f"ToolServerError: {self.remote} failed: {text}")
        return ToolResult(text, value=result.structured_content or text)


def render_content(result: Any) -> str:
    """A call result's content as text: text parts as they are, other parts named."""
    parts: list[str] = []
    for item in result.content:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and hasattr(item.resource, "text"):
            parts.append(item.resource.text)
        elif kind == "resource":
            parts.append(f"[resource {item.resource.uri}]")
        else:
            parts.append(f"[{kind or 'content'}: {getattr(item, 'mime_type', '')}]")
    structured = result.structured_content
    if not parts and structured is not None:
        return pydantic_core.to_json(structured).decode("utf-8")
    return "\n".join(parts) if parts else "(no content)"


def _sole(exc: Exception) -> Exception:
    """The one exception inside nested exception groups, or `exc` when there are several."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    """The innermost useful message of an exception (task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or "the connection closed"
    return f"{type(exc).__name__}: {text}"


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ConfigError("MCP tools need the mcp package: pip install 'swarmflow[mcp]'") from None


def mcp_stdio(
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    prefix: str = "",
    include: Sequence[str] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> McpServer:
    """An MCP server the run starts as a subprocess and talks to over stdio.

    `env` is added to the SDK's safe default environment (PATH, HOME and the like); the
    server is stopped when the run ends.
    """
    _require_sdk()
    from mcp import StdioServerParameters

    params = StdioServerParameters(command=command, args=list(args), env=dict(env or {}), cwd=cwd)
    label = " ".join([command, *args])
    return McpServer(
        label,
        ("stdio", params),
        prefix,
        tuple(include) if include is not None else None,
        startup_timeout=startup_timeout,
    )


def mcp_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    prefix: str = "",
    include: Sequence[str] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> McpServer:
    """An MCP server reached over streamable HTTP at `url` (connected for the run's length)."""
    _require_sdk()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"mcp_http needs an http:// or https:// URL, got {url!r}")
    return McpServer(
        url,
        ("http", (url, dict(headers or {}))),
        prefix,
        tuple(include) if include is not None else None,
        startup_timeout=startup_timeout,
    )
