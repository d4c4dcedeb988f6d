"""The `reserve` and `release` tools: hold a shared-workspace file for a short time.

While one agent holds a file, another agent's write to it is refused with who holds it and
for how long. `reserve` never waits: it is granted or refused at once, so agents reserving in
opposite order cannot deadlock. A reservation ends at its timeout, on `release`, or when the
holder's session ends. Only a shared workspace has reservations.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.record.events import FileReserved, ReservationRefused
from swarmflow.tools.base import ArgsModel, BuiltinTool, resolve_path, workspace_of

DEFAULT_SECONDS = 30.0
"""STORM's reservation time."""


@runtime_checkable
class ReservationTable(Protocol):
    """What the tools need of a shared workspace's reservations."""

    def reserve(self, key: str, session: str, agent: str, seconds: float) -> float: ...

    def release(self, key: str, session: str) -> bool: ...


@runtime_checkable
class Reserving(Protocol):
    """A workspace whose files can be reserved (the shared kind)."""

    reservations: ReservationTable

    def key_of(self, path: str) -> str: ...


class ReserveArgs(ArgsModel):
    """Arguments of `reserve`."""

    path: str = Field(description="File path relative to the workspace root.")
    seconds: float = Field(
        DEFAULT_SECONDS, gt=0, le=600, description="How long to hold it (at most 600)."
    )


class ReleaseArgs(ArgsModel):
    """Arguments of `release`."""

    path: str = Field(description="File path relative to the workspace root.")


def _table(ctx: ToolContext, tool: str, path: str) -> tuple[Reserving, str]:
    ws = workspace_of(ctx, tool)
    resolve_path(ctx, tool, path)  # refused here when it escapes the workspace
    if not isinstance(ws, Reserving):
        raise ToolError(f"{tool}: only a shared workspace has reservations (this one is {ws.kind})")
    return ws, ws.key_of(path)


class Reserve(BuiltinTool[ReserveArgs], name="reserve", workspace=True):
    """Reserve a file of the shared workspace for a short time (default 30 s): other agents'
    writes to it are refused until you release it, your session ends or the time is up. Answers
    at once: granted, or refused with who holds it."""

    async def call(self, args: ReserveArgs, ctx: ToolContext) -> ToolResult:
        ws, key = _table(ctx, self.name, args.path)
        try:
            seconds = ws.reservations.reserve(key, ctx.session, ctx.agent, args.seconds)
        except ToolError as exc:
            holder = getattr(exc, "holder", None)
            if isinstance(holder, str):
                left = getattr(exc, "seconds_left", 0.0)
                ctx.emit(ReservationRefused, path=key, holder=holder, seconds_left=left)
            raise
        ctx.emit(FileReserved, path=key, seconds=seconds)
        return ToolResult(f"reserved {key} for {seconds:g}s; release it when you are done")


class Release(BuiltinTool[ReleaseArgs], name="release", workspace=True):
    """Release a file you reserved, so other agents may write it again."""

    async def call(self, args: ReleaseArgs, ctx: ToolContext) -> ToolResult:
        ws, key = _table(ctx, self.name, args.path)
        if not ws.reservations.release(key, ctx.session):
            return ToolResult(f"{key} was not reserved by you; nothing to release")
        ctx.emit(FileReserved, path=key, seconds=0.0)
        return ToolResult(f"released {key}")
