"""The batch's own files read safely: the task list and `results.jsonl`, line by line.

Both are named or left by someone else, so neither may stop a batch with a traceback, a hang
or a MemoryError. A file must be a regular file (a FIFO or a device is refused at once, never
waited on); it is read a line at a time, and a line longer than `MAX_LINE` bytes is reported
as too long without being held in memory; a JSON value nested deeper than `MAX_DEPTH` levels
is refused. The regular-file check is the one reader's (`core.reading`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from swarmflow.core.reading import depth

MAX_LINE = 16 * 1024 * 1024
"""The longest line (bytes) of a task list or `results.jsonl`: 16 MiB."""
MAX_DEPTH = 100
"""The deepest nesting of lists and objects in a task's inputs or a result line."""
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a file: where it starts, its bytes (None when longer than `MAX_LINE`)."""

    number: int
    start: int
    data: bytes | None
    ended: bool
    """Whether a newline ends it (only a file's last line may lack one)."""


class BadLine(ValueError):
    """A line that is not what the file holds: why, in a few words."""


def lines(handle: BinaryIO) -> Iterator[Line]:
    """Every line of `handle`, at most `MAX_LINE` bytes of each held at once."""
    number, start = 0, 0
    while True:
        data = handle.readline(MAX_LINE + 1)
        if not data:
            return
        number += 1
        if len(data) > MAX_LINE and not data.endswith(b"\n"):
            size, ended = _skip_rest(handle, len(data))
            yield Line(number, start, None, ended)
            start += size
            continue
        yield Line(number, start, data, data.endswith(b"\n"))
        start += len(data)


def _skip_rest(handle: BinaryIO, size: int) -> tuple[int, bool]:
    """Read past the rest of a line too long to hold: its whole size, and whether it ended."""
    while True:
        chunk = handle.readline(_CHUNK)
        size += len(chunk)
        if not chunk:
            return size, False
        if chunk.endswith(b"\n"):
            return size, True


def json_value(line: Line, limit: int = MAX_DEPTH) -> Any:
    """The JSON value of one line, nested at most `limit` deep, or a `BadLine` saying why
    it is not one."""
    if line.data is None:
        raise BadLine(f"longer than {MAX_LINE} bytes")
    try:
        text = line.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadLine(
            f"not UTF-8 text (byte {line.data[exc.start]:#04x} at column {exc.start + 1})"
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"not JSON: {exc.msg}") from None
    except RecursionError:
        raise BadLine(f"nested deeper than {limit} levels") from None
    if depth(value) > limit:
        raise BadLine(f"nested deeper than {limit} levels")
    return value
