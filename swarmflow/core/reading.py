"""The one reader of every file swarmflow reads back: JSON and JSONL files of a run, a batch or
an experiment, and SQLite stores.

A file named by someone else, or left by a killed process, must never stop a command with a
hang, a traceback or a MemoryError. So, for every file:

- it must be a regular file: a FIFO, a device or a folder is refused at once, never waited on
  (opened with `O_NONBLOCK`, then checked on the open descriptor);
- a whole file holds at most `MAX_FILE` bytes, a line of a JSONL file at most `MAX_LINE`
  (no more of a line than that is ever held);
- a JSON value nests at most `MAX_DEPTH` levels of lists and objects (deeper input is one
  refusal, never a `RecursionError`);
- a SQLite query runs at most `QUERY_SECONDS` (a forged store whose view recurses forever is
  interrupted);
- a last line without a newline was torn by a crash mid-write: it is not read (the one torn-
  tail rule; a writer that appends cuts it off first, `record.lines.cut_torn_tail`);
- what is wrong is one `Unreadable` (a `ConfigError`) line naming the file, and the line
  when there is one: `PATH:LINE: why`.

The caps are far above what swarmflow writes itself, so that every reader reads back what
the writers wrote: the largest event a run writes (the `compacted` of a `compact` over 80,000
outcomes) is about 20 MiB, and events nest at most 200 levels (`record.events.MAX_NESTING`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from swarmflow.core.errors import ConfigError
from swarmflow.core.file_kinds import special_kind

MAX_FILE = 64 << 20
"""The largest whole JSON file read back (a manifest, `experiment.json`): 64 MiB."""
MAX_LINE = 64 << 20
"""The longest line of a JSONL file read back: 64 MiB (the `compacted` event of a `compact`
over 80,000 outcomes is about 20 MiB)."""
MAX_DEPTH = 1_024
"""The deepest nesting of lists and objects in a JSON value read back (orjson's own limit;
Python's parser, which reads what orjson refuses, stops near it at its recursion limit)."""
QUERY_SECONDS = 10.0
"""The longest a SQLite query of a store may run."""
_CHUNK = 1 << 20


class Unreadable(ConfigError):
    """A file that cannot be read back as what it should be: one line naming it."""


@contextmanager
def open_regular(path: Path, what: str) -> Iterator[BinaryIO]:
    """`path` open for reading, refused at once unless it is a regular file.

    Raises:
        Unreadable: it is not there, it cannot be opened, or it is a FIFO, a device, a folder.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read {what}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        check_regular(handle.fileno(), path, what)
        yield handle


def check_regular(fd: int, path: Path, what: str) -> None:
    """`Unreadable` unless the open file `fd` is a regular file."""
    kind = special_kind(os.fstat(fd).st_mode)
    if kind is not None:
        raise Unreadable(f"{path}: {what} must be a regular file, not {kind}")


def read_bytes(path: Path, what: str, cap: int = MAX_FILE) -> bytes:
    """The bytes of the regular file `path`, at most `cap` of them (`Unreadable` beyond)."""
    with open_regular(path, what) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise Unreadable(f"{path}: {what} must be at most {cap:,} bytes; it is larger")
    return data


def json_value(raw: bytes | str) -> Any:
    """The JSON value of `raw` (`ValueError` saying why when it is not JSON or nests deeper
    than `MAX_DEPTH`)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson refuses what Python's parser takes (a lone surrogate's escape), and stops
        # at its own depth: Python's parser decides, its recursion bounded.
        try:
            value = json.loads(raw)
        except RecursionError:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    return value


def depth(value: object) -> int:
    """How deep lists and objects nest in `value` (a scalar is 0), counted without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list | tuple):
            continue
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in item)
    return deepest


def read_json(path: Path, what: str, cap: int = MAX_FILE) -> Any:
    """The JSON value of the file `path` (`Unreadable`: `PATH: not WHAT: why`)."""
    data = read_bytes(path, what, cap)
    try:
        return json_value(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{path}: not {what}: {one_line(exc)}") from None


def lines(
    path: Path, what: str, max_line: int = MAX_LINE, torn: Callable[[int], None] | None = None
) -> Iterator[tuple[int, bytes]]:
    """(number, bytes) of each whole line of `path` that is not blank, without its newline;
    a torn last line (no newline) is left out (`torn` is told its number). A line longer
    than `max_line` is `Unreadable` naming it, read no further than that."""
    with open_regular(path, what) as fh:
        number = 0
        while raw := fh.readline(max_line + 1):
            number += 1
            if len(raw) > max_line:
                raise Unreadable(f"{path}:{number}: not {what}: longer than {max_line:,} bytes")
            if not raw.endswith(b"\n"):  # torn by a crash mid-write
                if torn is not None and raw.strip():
                    torn(number)
                return
            if raw.strip():
                yield number, raw[:-1]


def json_lines(path: Path, what: str, max_line: int = MAX_LINE) -> Iterator[tuple[int, Any]]:
    """(number, value) of each JSON line of `path` (see `lines`); a line that is not JSON
    is `Unreadable`: `PATH:LINE: not WHAT: why`."""
    for number, raw in lines(path, what, max_line):
        try:
            yield number, json_value(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise Unreadable(f"{path}:{number}: not {what}: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """What an exception says, on one line of at most 200 characters."""
    return " ".join(str(exc).split())[:200]


def bound_queries(conn: sqlite3.Connection, seconds: float = QUERY_SECONDS) -> None:
    """Interrupt any statement of `conn` still running `seconds` after this call (SQLite
    then raises `OperationalError: interrupted`): a connection is opened for one use."""
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)


class LineTail:
    """The whole lines appended to a growing file since the last read: a live log read as it
    is written, by the rules above (a regular file; no more than `max_line` bytes of a line
    held: a longer line is skipped, and counted in `skipped`). A last line without its newline
    is left for the next read (its writer may be in the middle of it), and nothing is ever
    cut off the file. A file replaced or cut shorter is read again from its start."""

    def __init__(self, path: Path, what: str, max_line: int = MAX_LINE) -> None:
        self.path, self.what, self.max_line = path, what, max_line
        self.offset = 0
        """Where the next read starts: the end of the last whole line read."""
        self.number = 0
        """The number of the last whole line read."""
        self.skipped = 0
        self.restarted = 0
        """How many times the file was found replaced or cut, and read again from its start."""
        self._file: tuple[int, int] | None = None

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(number, bytes) of each whole, non-blank line written since the last read, without
        its newline; where it stopped is kept as each line is taken.

        Raises:
            Unreadable: the file is not there, cannot be opened, or is not a regular file.
        """
        with open_regular(self.path, self.what) as fh:
            self._check_same(os.fstat(fh.fileno()))
            fh.seek(self.offset)
            while raw := fh.readline(self.max_line + 1):
                if len(raw) > self.max_line:
                    if not self._skip_rest(fh):
                        return
                    continue
                if not raw.endswith(b"\n"):  # being written, or torn: not taken
                    return
                self.offset += len(raw)
                self.number += 1
                if raw.strip():
                    yield self.number, raw[:-1]

    def _check_same(self, st: os.stat_result) -> None:
        file = (st.st_dev, st.st_ino)
        if (self._file is not None and file != self._file) or st.st_size < self.offset:
            self.offset = self.number = 0
            self.restarted += 1
        self._file = file

    def _skip_rest(self, fh: BinaryIO) -> bool:
        """Past the end of an over-long line (counted as skipped), reading it a chunk at a
        time; False when it has no end yet (left for the next read)."""
        start = self.offset
        fh.seek(start)
        while chunk := fh.read(_CHUNK):
            newline = chunk.find(b"\n")
            if newline >= 0:
                self.offset = fh.tell() - len(chunk) + newline + 1
                fh.seek(self.offset)
                self.number += 1
                self.skipped += 1
                return True
        fh.seek(start)
        return False
