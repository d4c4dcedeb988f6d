"""Reading and writing workspace files, through the versioned API when the workspace has one.

A `shared` (STORM) workspace records what each session read and refuses stale writes; every
file tool goes through `read_text`/`write_text` here so that check always applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio.to_thread

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext
from swarmflow.tools.base import workspace_of
from swarmflow.tools.paths import resolve_inside

_BINARY_PROBE = 8192


@runtime_checkable
class VersionedFiles(Protocol):
    """A workspace that versions files per reader (the shared kind)."""

    async def read_text(self, path: str, reader: str | None) -> str:
        """The file's text; a `reader` records the version it saw, None only peeks."""

    async def write_text(self, path: str, content: str, reader: str) -> None:
        """Write unless the reader's snapshot is stale."""


async def read_text(ctx: ToolContext, tool: str, path: str, *, record: bool = True) -> str:
    """The text of `path` in the session's workspace; `record=False` leaves snapshots alone."""
    ws = workspace_of(ctx, tool)
    if isinstance(ws, VersionedFiles):
        return await ws.read_text(path, ctx.session if record else None)
    target = resolve_inside(ws.root, path)
    text = await anyio.to_thread.run_sync(load_text, target)
    if text is None:
        raise ToolError(f"no such file: {path!r}")
    return text


async def write_text(ctx: ToolContext, tool: str, path: str, content: str) -> None:
    """Write `content` to `path`, creating parent directories."""
    ws = workspace_of(ctx, tool)
    if isinstance(ws, VersionedFiles):
        await ws.write_text(path, content, ctx.session)
        return
    target = resolve_inside(ws.root, path)
    await anyio.to_thread.run_sync(store_text, target, content)


def load_text(target: Path) -> str | None:
    """The file's text, None when it does not exist; line endings are kept as they are."""
    if target.is_dir():
        raise ToolError(f"{target.name!r} is a directory; use list_files to see what it holds")
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolError(f"cannot read {target.name!r}: {exc.strerror}") from None
    if b"\x00" in data[:_BINARY_PROBE]:
        raise ToolError(f"{target.name!r} looks like a binary file; tools only handle text")
    return data.decode("utf-8", errors="replace")


def store_text(target: Path, content: str) -> None:
    """Write the file, creating its parent directories."""
    if target.is_dir():
        raise ToolError(f"{target.name!r} is a directory, not a file")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))
    except OSError as exc:
        raise ToolError(f"cannot write {target.name!r}: {exc.strerror}") from None
