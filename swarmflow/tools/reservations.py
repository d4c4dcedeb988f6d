"""The `reserve` and `release` tools: hold a shared-workspace file for a short time.

While one agent holds a file, another agent's write to it is refused with who holds it and
for how long. `reserve` never waits: it is granted or refused at once, so agents reserving in
opposite order cannot deadlock. A reservation ends at its timeout, on `release`, or when the
holder's session ends. Only a shared workspace has reservations.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.record.events import FileReserved, ReservationRefused
from swarmflow.tools.base import ArgsModel, expect_args, resolve_path, workspace_of

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


class Reserve:
    """Holds a file for a short time so no other agent writes it meanwhile."""

    name = "reserve"
    description = (
        "Reserve a file of the shared workspace for a short time (default 30 s): other "
        "agents' writes to it are refused until you release it, your session ends or the time "
        "is up. Answers at once: granted, or refused with who holds it."
    )
    args: type[BaseModel] = ReserveArgs
    needs_workspace = True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        a = expect_args(args, ReserveArgs)
        ws, key = _table(ctx, self.name, a.path)
        try:
            seconds = ws.reservations.reserve(key, ctx.session, ctx.agent, a.seconds)
        except ToolError as exc:
            holder = getattr(exc, "holder", None)
            if isinstance(holder, str):
                left = getattr(exc, "seconds_left", 0.0)
                ctx.emit(ReservationRefused, path=key, holder=holder, seconds_left=left)
            raise
        ctx.emit(FileReserved, path=key, seconds=seconds)
        return ToolResult(f"reserved {key} for {seconds:g}s; release it when you are done")


class Release:
    """Gives a reserved file back."""

    name = "release"
    description = "Release a file you reserved, so other agents may write it again."
    args: type[BaseModel] = ReleaseArgs
    needs_workspace = True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        a = expect_args(args, ReleaseArgs)
        ws, key = _table(ctx, self.name, a.path)
        if not ws.reservations.release(key, ctx.session):
            return ToolResult(f"{key} was not reserved by you; nothing to release")
        ctx.emit(FileReserved, path=key, seconds=0.0)
        return ToolResult(f"released {key}")
