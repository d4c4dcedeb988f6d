"""Reading a run's `events.jsonl` back, tolerating a log cut short by a killed process.

A log is read up to its last complete, valid line. What follows it (a torn final line, or a
line that is not an event) is left out, and the reading says so. A line is not an event when
it is not UTF-8, not JSON, not one of the events, nested deeper than the JSON readers go, or
longer than `MAX_LINE` bytes (no more of a line than that is ever held).

Some paths are not a run's log at all: `LogError`, one line naming the path, and never a wait
or a traceback. Those are a path that is not a regular file (a FIFO, a device such as
`/dev/zero`, a socket, a directory: each is refused before a byte is read, so none can block
or pour bytes forever), an empty file, and a file whose first line is not an event.

`read_log` checks the file and its first event; the events are then read as a stream, one line
at a time: each pass over `RunLog.stream()` reads the file again, so the text report holds what
it folds, never the events. `RunLog.events` holds them all, for the HTML page and the graphs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from swarmflow.core import reading
from swarmflow.core.errors import SwarmflowError
from swarmflow.core.file_kinds import special_kind
from swarmflow.record.events import EventBase, parse_event
from swarmflow.record.files import EVENTS_FILE

MAX_LINE = reading.MAX_LINE  # the one reader's cap, which every writer keeps within
"""The longest line read as an event, in bytes: a longer one is not an event, and no more of
it than this is read. An event is a few hundred bytes (a tool's result and a message are cut
to 2,000 characters in it); only a flow's inputs and output are logged whole."""
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO with no writer would hold a blocking open forever
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class LogError(SwarmflowError):
    """A path that holds no readable event log."""


class LogStream(Iterator[EventBase]):
    """One pass over a log's events, read line by line; then where it stopped, and why.

    It can be read once. Reading never raises: a line that is not an event, or a file that can
    no longer be read, ends the pass, and `stopped_at`, `problem` and `note()` say so.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        """Events read so far."""
        self.stopped_at: int | None = None
        """The 1-based line where reading stopped early (a torn or foreign line), else None."""
        self.problem = ""
        self._lines = 0
        self._events = self._read()

    def __next__(self) -> EventBase:
        return next(self._events)

    @property
    def truncated(self) -> bool:
        return self.stopped_at is not None

    def note(self) -> str:
        """One line saying what was left out, or ''."""
        return truncation_note(self.count, self.stopped_at, self.problem)

    def _read(self) -> Iterator[EventBase]:
        try:
            with open_log(self.path) as fh:
                yield from self._events_in(fh)
        except (LogError, OSError) as exc:  # changed or failed since `read_log` checked it
            self._stop(self._lines + 1, f"could not be read: {exc}")

    def _events_in(self, fh: BinaryIO) -> Iterator[EventBase]:
        for raw, ended in _lines(fh):
            self._lines += 1
            if not raw.strip():
                continue
            event = _parse(raw)
            if event is None:
                self._stop(self._lines, _problem(raw, ended))
                return
            self.count += 1
            yield event

    def _stop(self, line: int, problem: str) -> None:
        self.stopped_at, self.problem = line, problem


class RunLog:
    """A run's event log, checked by `read_log`: read as a stream or all at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def stream(self) -> LogStream:
        """A new pass over the events, one line at a time (nothing but the line is held)."""
        return LogStream(self.path)

    @property
    def events(self) -> list[EventBase]:
        """Every event, read once and kept (the HTML page embeds them all)."""
        return self._whole[0]

    @property
    def stopped_at(self) -> int | None:
        """The 1-based line where reading stopped early (a torn or foreign line), else None."""
        return self._whole[1].stopped_at

    @property
    def problem(self) -> str:
        return self._whole[1].problem

    @property
    def truncated(self) -> bool:
        return self.stopped_at is not None

    def note(self) -> str:
        """One line saying what was left out of `events`, or ''."""
        return self._whole[1].note()

    @cached_property
    def _whole(self) -> tuple[list[EventBase], LogStream]:
        stream = self.stream()
        return list(stream), stream


def truncation_note(count: int, stopped_at: int | None, problem: str) -> str:
    """`log truncated: read N events, up to line L; line L+1 ...`, or '' for a whole log."""
    if stopped_at is None:
        return ""
    return (
        f"log truncated: read {count} events, up to line {stopped_at - 1}; "
        f"line {stopped_at} {problem}"
    )


def log_path(path: str | Path) -> Path:
    """`RUN_DIR/events.jsonl` for a run directory, the path itself for a file."""
    given = Path(path)
    return given / EVENTS_FILE if given.is_dir() else given


def read_log(path: str | Path) -> RunLog:
    """The log at `path` (a run directory or the JSONL file itself), checked up to its first
    event; `LogError` (one line) when there is none to read there."""
    file = log_path(path)
    try:
        with open_log(file) as fh:
            _first_event(file, fh)
    except FileNotFoundError:
        where = f"{path} holds no {EVENTS_FILE}" if Path(path).is_dir() else f"no such file: {path}"
        raise LogError(f"{where} (not a run directory?)") from None
    except OSError as exc:
        raise LogError(f"cannot read {file}: {exc.strerror or exc}") from None
    return RunLog(file)


def open_log(file: Path) -> BinaryIO:
    """`file` opened for reading in binary, when it is a regular file; else `LogError`.

    The open does not block (a FIFO with no writer would hold it forever) and the descriptor it
    gave is what is checked, so nothing can swap the path for a FIFO in between.
    """
    try:
        fd = os.open(file, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError:  # a socket cannot be opened at all: say what it is
        kind = _kind_at(file)
        if kind:
            raise LogError(_not_a_file(file, kind)) from None
        raise
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind:
            raise LogError(_not_a_file(file, kind))
        if _OPEN_FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _not_a_file(file: Path, kind: str) -> str:
    return f"{file} is {kind}, not a regular file: not an event log"


def _kind(mode: int) -> str:
    """What a path that is not a regular file is ('' for a regular file)."""
    return special_kind(mode) or ""


def _kind_at(file: Path) -> str:
    try:
        return _kind(os.stat(file).st_mode)
    except OSError:
        return ""


def _first_event(file: Path, fh: BinaryIO) -> None:
    """Refuse a file that holds no event, or whose first line is not one."""
    for number, (raw, _ended) in enumerate(_lines(fh), start=1):
        if not raw.strip():
            continue
        if _parse(raw) is None:
            raise LogError(f"{file} is not a swarmflow event log: line {number} is not an event")
        return
    raise LogError(f"{file} is empty: the run recorded no events")


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Each line without its newline, and whether it had one. A line longer than `MAX_LINE`
    comes as its first `MAX_LINE + 1` bytes, and is not an event."""
    while raw := fh.readline(MAX_LINE + 1):
        ended = raw.endswith(b"\n")
        yield (raw[:-1] if ended else raw), ended


def _problem(raw: bytes, ended: bool) -> str:
    """Why a line is not read as an event."""
    if len(raw) > MAX_LINE:
        return f"is longer than {MAX_LINE // (1024 * 1024)} MiB: not an event"
    # Every event ends with a newline: a line without one at the end was cut off mid-write.
    return "is not an event" if ended else "was cut off before its end"


def _parse(raw: bytes) -> EventBase | None:
    if len(raw) > MAX_LINE:
        return None
    try:
        return parse_event(raw)
    except (ValidationError, ValueError):  # not UTF-8, not JSON, nested too deep, no event
        return None
