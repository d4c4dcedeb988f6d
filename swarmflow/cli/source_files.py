"""Reading a flow file the user named: a regular file of bounded size, or one clear line.

`swarmflow check x.swarm` and `graph x.swarm` must not hang on a FIFO or read `/dev/zero`
until memory runs out; the parser refuses a source over its own limit, so no more than that
(in UTF-8, at most four bytes a character) is read. A file larger still is the same located
problem the parser gives (`SourceTooLarge`), without being read whole.
"""

from __future__ import annotations

import os
import stat

from swarmflow.dsl.syntax.diagnostics import Diagnostic, Spot
from swarmflow.dsl.syntax.grammar import MAX_SOURCE_CHARS

MAX_SOURCE_BYTES = 4 * MAX_SOURCE_CHARS


class SourceError(Exception):
    """A flow file that cannot be read, with why."""


class SourceTooLarge(SourceError):
    """A flow file larger than any the parser reads: its one located problem, as the parser
    gives a file over its limit that was read whole."""

    def __init__(self, path: str, size: int) -> None:
        message = (
            f"this file holds {size:,} bytes, more than the {MAX_SOURCE_CHARS:,} characters a "
            ".swarm file may hold; split the flow, or move long text into files next to it"
        )
        self.diagnostic = Diagnostic.at(Spot(1, 1), "syntax", message, path)
        super().__init__(self.diagnostic.header())


def read_flow_source(path: str) -> str:
    """The text of the flow file at `path`; `SourceError` when it cannot be read as one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise SourceError(f"cannot read {path}: not a regular file")
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceTooLarge(path, max(size, len(data)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise SourceError(f"cannot read {path}: {why}") from None
