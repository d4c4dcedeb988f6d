"""One process at a time per run directory: an advisory lock held for the run's life.

`run.pid` says which process runs a run, for people and for `swarmflow runs`; it cannot
exclude a second process by itself (two resumes that both find a stale pid both go on). The
lock can: `flock` on `run.lock`, taken before the directory is read or written and released
when the run ends, or by the kernel when its process dies, so it is never stale.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from swarmflow.core.errors import ConfigError

RUN_LOCK = "run.lock"
_HELD: dict[Path, int] = {}
"""The lock's open file, by resolved run directory, for every run this process holds."""


def hold_run(run_dir: Path) -> None:
    """Take `run_dir` for this process (again is a no-op); `ConfigError` when another process
    runs or resumes it now."""
    key = run_dir.resolve()
    if key in _HELD:
        return
    try:
        fd = os.open(key / RUN_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot lock the run directory {key}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ConfigError(
            f"{key} is in use by another process (running or resuming that run); wait for it to end"
        ) from None
    _HELD[key] = fd


def let_go(run_dir: Path) -> None:
    """Release `run_dir` if this process holds it."""
    fd = _HELD.pop(run_dir.resolve(), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor releases the lock
