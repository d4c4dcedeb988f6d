"""Reading a flow file the user named: a regular file of bounded size, or one clear line.

`swarmflow check x.swarm` and `graph x.swarm` must not hang on a FIFO or read `/dev/zero`
until memory runs out; the parser refuses a source over its own limit, so no more than that
(in UTF-8, at most four bytes a character) is read.
"""

from __future__ import annotations

import os
import stat

from swarmflow.dsl.syntax.grammar import MAX_SOURCE_CHARS

MAX_SOURCE_BYTES = 4 * MAX_SOURCE_CHARS


class SourceError(Exception):
    """A flow file that cannot be read, with why."""


def read_flow_source(path: str) -> str:
    """The text of the flow file at `path`; `SourceError` when it cannot be read as one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise SourceError(f"cannot read {path}: not a regular file")
        data = fh.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceError(f"cannot read {path}: larger than {MAX_SOURCE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise SourceError(f"cannot read {path}: {why}") from None
