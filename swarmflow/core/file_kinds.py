"""What a path that is not a regular file is, in words: one vocabulary for every reader that
refuses one (the file tools, the event log, a batch's files)."""

from __future__ import annotations

import stat

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def special_kind(mode: int) -> str | None:
    """None for a regular file; else what the file of `mode` (from `stat`) is."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "a special file")
