"""A file of JSON lines written ahead and read back: the one writer and the one reader of both
files of a run directory (`events.jsonl` through the JSONL sink, `journal.jsonl` through the
journal).

Writing: lines are held until `flush`, which writes all of them with one unbuffered
`write(2)` (and `fsync`s it, with `fsync`). The run flushes at its write barrier, before every
external effect (docs/durability.md), so a process killed at any moment leaves whole lines and
every effect that started had the lines before it on disk. An optional `scrub` hook rewrites
each line as it is held (the run's secret redactor).

Reading: a last line with no newline was torn by a crash mid-write (a power cut): it is cut
off the file first. Each other line, read by the one reader (`core.reading`), goes to the
caller's parser; a line it refuses is one `ConfigError` naming the file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from io import FileIO
from pathlib import Path

from pydantic import ValidationError

from swarmflow.core import reading
from swarmflow.core.errors import ConfigError

JOIN_HELD = 32
"""Lines held before they are joined into one piece (`LineWriter._keep`)."""


class LineWriter:
    """Appends lines to `path`, held until `flush`."""

    def __init__(
        self,
        path: Path,
        *,
        fsync: bool = False,
        scrub: Callable[[bytes], bytes] | None = None,
        what: str = "a record file",
    ) -> None:
        self.path = path
        self.fsync = fsync
        """Sync the file to disk at every flush that wrote something (`durability="fsync"`)."""
        self._scrub = scrub
        # Unbuffered: each flush is one write(2); what is held is held here, in `_held`.
        self._fh = _open_appending(path, what)
        self._held: list[bytes] = []
        self._loose = 0
        """How many of the last lines held are not joined yet (`_keep`)."""

    def hold(self, line: bytes) -> None:
        """Hold one line (no newline) until the next `flush`."""
        self._keep(line if self._scrub is None else self._scrub(line))

    def _keep(self, line: bytes) -> None:
        """Hold `line`, joining every `JOIN_HELD` lines into one piece: a line may keep the
        whole buffer it was serialised into (`record.jsonline`), and thousands can be held
        between two barriers (the ends of a fan-out's branches that all waited on their model
        calls at once). Only the loose lines are joined, so each line is copied once here."""
        held = self._held
        held.append(line)
        self._loose += 1
        if self._loose == JOIN_HELD:
            held[-JOIN_HELD:] = [b"\n".join(held[-JOIN_HELD:])]
            self._loose = 0

    def flush(self) -> None:
        """Write every held line, in one write(2) (and sync it with `fsync`)."""
        if not self._held:
            return
        self._held.append(b"")  # the last line's newline, without copying the joined lines
        data = b"\n".join(self._held)
        self._held.clear()
        self._loose = 0
        _write_all(self._fh, data)
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.flush()
            self._fh.close()


def _open_appending(path: Path, what: str) -> FileIO:
    """`path` open for appending, unbuffered; refused at once (`ConfigError`) unless it is a
    regular file: opening a FIFO with no reader would wait forever."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        reading.check_regular(fd, path, what)
    except ConfigError:
        os.close(fd)
        raise
    return os.fdopen(fd, "ab", buffering=0)


def _write_all(fh: FileIO, data: bytes) -> None:
    """A raw file may take less than asked for (a full disk, a signal): write the rest."""
    written = fh.write(data)
    if written == len(data):  # almost always: no view to make
        return
    view = memoryview(data)[written:]
    while view:
        view = view[fh.write(view) :]


def read_lines(path: Path, what: str, take: Callable[[bytes], None]) -> None:
    """Hand each line of `path` to `take`, in order, after cutting a torn last line off the
    file; the file is read by the one reader (`core.reading.lines`: a regular file, lines of
    at most `MAX_LINE` bytes). A line `take` refuses (a `ValueError`, pydantic's
    `ValidationError` included, a `KeyError` or a `TypeError`) is a `ConfigError`:
    `PATH:LINE: not WHAT: why`."""
    cut_torn_tail(path)
    for number, raw in reading.lines(path, what):
        try:
            take(raw)
        except (KeyError, TypeError, ValueError) as exc:  # JSON, but not the `what` it says
            raise ConfigError(f"{path}:{number}: not {what}: {_why(exc)}") from None
        except ConfigError as exc:  # the caller's own refusal: located here
            raise ConfigError(f"{path}:{number}: {exc.message}") from None


def cut_torn_tail(path: Path) -> None:
    """Cut a last line that has no newline: it was torn by a crash mid-write (a file that
    is not a regular one is refused, never waited on)."""
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb+", buffering=0) as fh:
        reading.check_regular(fh.fileno(), path, "a record file")
        end = fh.seek(0, os.SEEK_END)
        keep = end
        while keep > 0:
            start = max(0, keep - _TAIL_CHUNK)
            fh.seek(start)
            chunk = fh.read(keep - start)
            if keep == end and chunk.endswith(b"\n"):
                return  # whole
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            keep = start
        fh.truncate(keep)


_TAIL_CHUNK = 1 << 16


def _why(exc: Exception) -> str:
    """One line saying what is wrong with a line."""
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"{where}: {first['msg']}{more}" if where else f"{first['msg']}{more}"
    return " ".join(str(exc).split())
