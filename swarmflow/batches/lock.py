"""One batch at a time on one `OUT` folder: an exclusive lock held for the batch's life.

Two batches on one folder would each take the other's running tasks for interrupted ones
(and record them failed, or resume them while they run), and could start one task twice
into one run directory. So a batch takes `fcntl.flock` on `OUT/batch.lock` before it reads
anything there, writes its pid into the file (so that a second batch can say whose it is),
and holds the lock until it ends. The kernel drops the lock with the process however it
ends, a SIGKILL included, so a stale lock never blocks the next batch.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import check_regular

LOCK_FILE = "batch.lock"


@contextmanager
def batch_lock(root: Path) -> Iterator[None]:
    """Hold the lock on the batch folder `root` while the block runs.

    Raises:
        ConfigError: another process holds it (the message names its pid), or the lock file
            cannot be had.
    """
    path = root / LOCK_FILE
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot open the batch lock {path}: {exc.strerror}") from None
    try:
        check_regular(fd, path, "the batch lock")
        _take(fd, root)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # no pid left behind for the next batch to name
    finally:
        os.close(fd)  # closing the file drops the lock


def _take(fd: int, root: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigError(
            f"{root} is in use by another batch ({_holder(fd)}); wait for it to end, or "
            "use another out folder"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _holder(fd: int) -> str:
    """Who holds the lock, from the pid it wrote (it writes it just after taking the lock)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return f"process {text}" if text.isdigit() else "a process that is starting"
