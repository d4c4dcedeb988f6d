"""Reading and writing workspace files, through the versioned API when the workspace has one.

A `shared` (STORM) workspace records what each session read and refuses stale writes; every
file tool goes through `read_text`/`write_text` here so that check always applies, and every
accepted shared write is recorded as a `shared_file_written` event with its version.

Only regular files are read, and never more than `READ_CAP` bytes: a FIFO, a device or a socket
would block a worker thread forever, and a huge file would fill memory before being refused.
Writes replace the file atomically, so a concurrent reader sees the old or the new content,
never a half-written one.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio.to_thread

from swarmflow.core.errors import ToolError
from swarmflow.core.file_kinds import special_kind
from swarmflow.core.ports import ToolContext
from swarmflow.record.events import ReservationRefused, SharedFileWritten
from swarmflow.tools.base import resolve_path, workspace_of
from swarmflow.tools.walk import looks_binary

READ_CAP = 4_000_000
"""The largest file, in bytes, the file tools read (source files are far smaller)."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


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
    target = resolve_path(ctx, tool, path)  # refused here, whatever kind of workspace
    if isinstance(ws, VersionedFiles):
        return await ws.read_text(path, ctx.session if record else None)
    text = await anyio.to_thread.run_sync(load_text, target)
    if text is None:
        raise ToolError(f"no such file: {path!r}")
    return text


async def write_text(
    ctx: ToolContext, tool: str, path: str, content: str, *, note: str = ""
) -> None:
    """Write `content` to `path`, creating parent directories; `note` is the intent a shared
    workspace shows later readers."""
    ws = workspace_of(ctx, tool)
    target = resolve_path(ctx, tool, path)
    if isinstance(ws, VersionedFiles):
        try:
            key, previous, version = await ws.write_text(path, content, ctx.session, note)
        except ToolError as exc:
            _record_refusal(ctx, exc)
            raise
        ctx.emit(SharedFileWritten, path=key, version=version, previous=previous)
        return
    await anyio.to_thread.run_sync(store_text, target, content)


def unseen_notes(ctx: ToolContext, tool: str, path: str) -> list[str]:
    """The intent notes on versions of `path` this session has not read (shared kind only)."""
    ws = workspace_of(ctx, tool)
    resolve_path(ctx, tool, path)
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


def load_text(target: Path, cap: int = READ_CAP) -> str | None:
    """The file's text, None when it does not exist; line endings are kept as they are."""
    data = load_bytes(target, cap)
    if data is None:
        return None
    if looks_binary(data):
        raise ToolError(f"{target.name!r} looks like a binary file; tools only handle text")
    return data.decode("utf-8", errors="replace")


def load_bytes(target: Path, cap: int = READ_CAP) -> bytes | None:
    """At most `cap` bytes of a regular file; ToolError for anything else or anything larger."""
    try:
        mode = os.lstat(target).st_mode
        _refuse_special(target, mode)
        if stat.S_ISDIR(mode):  # opening it would succeed, and reading it fail
            raise ToolError(f"{target.name!r} is a directory; use list_files to see what it holds")
        fd = os.open(target, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolError(f"cannot read {target.name!r}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        # Checked again on the open file: the path may have been swapped since the lstat.
        info = os.fstat(handle.fileno())
        _refuse_special(target, info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{target.name!r} is a directory; use list_files to see what it holds")
        _refuse_size(target, info.st_size, cap)
        data = handle.read(cap + 1)
    _refuse_size(target, len(data), cap)
    return data


def _refuse_special(target: Path, mode: int) -> None:
    """ToolError for FIFOs, devices and sockets, which a read could block on forever."""
    kind = kind_of(mode)
    if kind is not None:
        raise ToolError(f"{target.name!r} is {kind}; the file tools only read regular files")


def _refuse_size(target: Path, size: int, cap: int) -> None:
    """ToolError for files over the cap, before their content is read."""
    if size > cap:
        raise ToolError(
            f"{target.name!r} is {size:,} bytes; the file tools read files up to {cap:,} bytes. "
            "Look at parts of it with run_shell (head, tail, sed -n) instead."
        )


def store_text(target: Path, content: str) -> None:
    """Replace the file atomically (keeping its permissions), creating parent directories."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ToolError(f"cannot write {target.name!r}: {exc.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise ToolError(f"{target.name!r} is a directory, not a file")
    if mode is not None and kind_of(mode) is not None:
        raise ToolError(f"{target.name!r} is {kind_of(mode)}; the file tools only write files")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, content.encode("utf-8"), mode)
    except OSError as exc:
        raise ToolError(f"cannot write {target.name!r}: {exc.strerror}") from None


def _replace(target: Path, data: bytes, mode: int | None) -> None:
    """Write `data` to a temporary file beside `target`, then rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=".swarmflow-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
