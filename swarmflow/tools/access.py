"""Reading and writing workspace files, through the versioned API when the workspace has one.

A `shared` (STORM) workspace records what each session read and refuses stale writes; every
file tool goes through `read_text`/`write_text` here so that check always applies, and every
accepted shared write is recorded as a `shared_file_written` event with its version.

Every read and write goes through the safe-path layer (`core.safe_paths`): the path is first
resolved to its real path inside the workspace (a link that stays inside is replaced by what
it names; one leading out is refused), then opened relative to the workspace's root
descriptor, one component at a time, with no link followed, so a link swapped in between the
check and the open is refused, never followed out. Only regular files are read, and never
more than `READ_CAP` bytes: a FIFO, a device or a socket would block a worker thread forever,
and a huge file would fill memory before being refused. Writes replace the file atomically,
so a concurrent reader sees the old or the new content, never a half-written one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

import anyio.to_thread

from swarmflow.core import safe_paths
from swarmflow.core.errors import ToolError
from swarmflow.core.file_kinds import special_kind
from swarmflow.core.ports import ToolContext
from swarmflow.record.events import ReservationRefused, SharedFileWritten
from swarmflow.tools.base import locate, workspace_of
from swarmflow.tools.walk import looks_binary

READ_CAP = 4_000_000
"""The largest file, in bytes, the file tools read (source files are far smaller)."""


@runtime_checkable
class VersionedFiles(Protocol):
    """A workspace that versions files per reader (the shared kind)."""

    async def read_text(self, path: str, reader: str | None) -> str:
        """The file's text; a `reader` records the version it saw, None only peeks."""

    async def write_text(
        self, path: str, content: str, reader: str, note: str = ""
    ) -> tuple[str, int, int]:
        """Write unless the reader's snapshot is stale; returns (key, previous, new version).
        `note`: the writer's intent, shown to readers that have not seen this version."""

    def unseen_notes(self, path: str, reader: str) -> list[str]:
        """The intent notes on versions of `path` that `reader` has not read."""


async def read_text(ctx: ToolContext, tool: str, path: str, *, record: bool = True) -> str:
    """The text of `path` in the session's workspace; `record=False` leaves snapshots alone."""
    ws = workspace_of(ctx, tool)
    if not path.strip():
        raise ToolError(
            f"{tool} needs the path of a file ('' names the workspace root); "
            "use list_files to see what it holds"
        )
    root, real = locate(ctx, tool, path)  # refused here, whatever kind of workspace
    if isinstance(ws, VersionedFiles):
        return await ws.read_text(path, ctx.session if record else None)
    text = await anyio.to_thread.run_sync(load_text, root, real)
    if text is None:
        raise ToolError(f"no such file: {path!r}")
    return text


async def write_text(
    ctx: ToolContext, tool: str, path: str, content: str, *, note: str = ""
) -> None:
    """Write `content` to `path`, creating parent directories; `note` is the intent a shared
    workspace shows later readers."""
    ws = workspace_of(ctx, tool)
    root, real = locate(ctx, tool, path)
    if isinstance(ws, VersionedFiles):
        try:
            key, previous, version = await ws.write_text(path, content, ctx.session, note)
        except ToolError as exc:
            _record_refusal(ctx, exc)
            raise
        ctx.emit(SharedFileWritten, path=key, version=version, previous=previous)
        return
    await anyio.to_thread.run_sync(store_text, root, real, content)


def unseen_notes(ctx: ToolContext, tool: str, path: str) -> list[str]:
    """The intent notes on versions of `path` this session has not read (shared kind only)."""
    ws = workspace_of(ctx, tool)
    locate(ctx, tool, path)
    return ws.unseen_notes(path, ctx.session) if isinstance(ws, VersionedFiles) else []


def _record_refusal(ctx: ToolContext, exc: ToolError) -> None:
    """A write refused because another agent holds the file: a `reservation_refused` event."""
    holder = getattr(exc, "holder", None)
    if isinstance(holder, str):
        path, left = getattr(exc, "path", ""), getattr(exc, "seconds_left", 0.0)
        ctx.emit(ReservationRefused, path=path, holder=holder, seconds_left=left)


def kind_of(mode: int) -> str | None:
    """What a non-regular, non-directory file is, in words (None for regular files and dirs)."""
    return None if stat.S_ISDIR(mode) else special_kind(mode)


def load_text(root: Path, real: PurePosixPath | str, cap: int = READ_CAP) -> str | None:
    """The text of the file at the real path `real` below `root` (`locate`), None when it
    does not exist; line endings are kept as they are."""
    data = load_bytes(root, real, cap)
    if data is None:
        return None
    if looks_binary(data):
        raise ToolError(f"{_name(real)!r} looks like a binary file; tools only handle text")
    return data.decode("utf-8", errors="replace")


def load_bytes(root: Path, real: PurePosixPath | str, cap: int = READ_CAP) -> bytes | None:
    """At most `cap` bytes of a regular file (no link followed on the way or at the end);
    ToolError for anything else or anything larger."""
    try:
        with safe_paths.open_file(root, real) as handle:
            _refuse_size(real, os.fstat(handle.fileno()).st_size, cap)
            data = handle.read(cap + 1)
    except FileNotFoundError:
        return None
    except safe_paths.NotRegular as exc:
        raise _not_a_file(real, exc.kind, "read") from None
    except OSError as exc:
        raise ToolError(f"cannot read {_name(real)!r}: {_why(exc)}") from None
    _refuse_size(real, len(data), cap)
    return data


def store_text(root: Path, real: PurePosixPath | str, content: str) -> None:
    """Replace the file at the real path `real` below `root` atomically (keeping its
    permissions), creating parent directories; no link is followed."""
    try:
        safe_paths.replace_bytes(root, real, content.encode("utf-8"))
    except safe_paths.NotRegular as exc:
        raise _not_a_file(real, exc.kind, "write") from None
    except OSError as exc:
        raise ToolError(f"cannot write {_name(real)!r}: {_why(exc)}") from None


def _not_a_file(real: PurePosixPath | str, kind: str, verb: str) -> ToolError:
    """The refusal of a folder, a FIFO, a device or a socket where a file should be."""
    if kind == "a directory":
        hint = "; use list_files to see what it holds" if verb == "read" else ", not a file"
        return ToolError(f"{_name(real)!r} is a directory{hint}")
    return ToolError(f"{_name(real)!r} is {kind}; the file tools only {verb} regular files")


def _refuse_size(real: PurePosixPath | str, size: int, cap: int) -> None:
    """ToolError for files over the cap, before their content is read."""
    if size > cap:
        raise ToolError(
            f"{_name(real)!r} is {size:,} bytes; the file tools read files up to {cap:,} bytes. "
            "Look at parts of it with run_shell (head, tail, sed -n) instead."
        )


def _name(real: PurePosixPath | str) -> str:
    return PurePosixPath(real).name


def _why(exc: OSError) -> str:
    """Why an open failed, without the host path the safe-path layer names."""
    if isinstance(exc, safe_paths.UnsafePath):
        return "a symbolic link or a non-folder on its way (it changed as it was opened)"
    return str(exc.strerror)
