"""Who holds a run directory: a fresh one is claimed by its process (`run.pid`), a process
that is gone is told from one still running, and a directory is released when its run ends."""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from swarmflow.core.errors import ConfigError
from swarmflow.durable.manifest import write_whole
from swarmflow.durable.run_lock import hold_run, let_go
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.runs_root import run_dir_in

LOCK = "run.pid"


def fresh_run_dir(root: Path, run_id: str) -> Path:
    """The directory of a new run `run_id` under `root`, made and taken for this process.

    A directory that holds a run already (its events or its journal) is refused: a second
    run there would append to the first one's record, its sequence numbers starting again.
    So is one a live process has taken: `run.pid` is made at once (whole, or not at all), so
    of two processes starting one run id together only one starts.

    Raises:
        ConfigError: the run id cannot name a directory, or the directory is taken.
    """
    run_dir = run_dir_in(root, run_id)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the run directory {run_dir}: {exc.strerror}") from None
    hold_run(run_dir)
    try:
        if _holds_run(run_dir):
            raise ConfigError(
                f"{run_dir} already holds run {run_id}; resume it (`swarmflow resume "
                f"{run_dir}`, or run(..., resume=...)) or start the run under another run_id"
            )
        _take(run_dir)
    except BaseException:
        let_go(run_dir)
        raise
    return run_dir


def _holds_run(run_dir: Path) -> bool:
    """Whether a run wrote its record in `run_dir` (an empty file is no run's)."""
    for name in (EVENTS_FILE, JOURNAL_FILE):
        with contextlib.suppress(FileNotFoundError):
            if (run_dir / name).stat().st_size > 0:
                return True
    return False


def _take(run_dir: Path) -> None:
    """Make `run.pid` for this process unless a live one is there (a stale one, of a process
    that is gone, is replaced). The file appears whole: it is written aside, then linked."""
    lock, aside = run_dir / LOCK, run_dir / f".{LOCK}.{os.getpid()}.tmp"
    aside.write_text(str(os.getpid()), encoding="utf-8")
    try:
        if _linked(aside, lock):
            return
        pid = live_pid(run_dir)
        if pid is not None:
            raise ConfigError(
                f"{run_dir} is taken by a live run (process {pid}); not starting another there"
            )
        os.replace(aside, lock)
    finally:
        aside.unlink(missing_ok=True)


def _linked(aside: Path, lock: Path) -> bool:
    """Put `aside` at `lock` unless a file is there; whether it was put."""
    try:
        os.link(aside, lock)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: checked, then replaced whole
        if lock.exists():
            return False
        os.replace(aside, lock)
    return True


def claim(run_dir: Path) -> None:
    """Mark the run as live in this process (`resume` and `clean` refuse a live run); the
    file is replaced whole, so a reader never finds it empty."""
    write_whole(run_dir / LOCK, str(os.getpid()))


def release(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / LOCK).unlink()
    let_go(run_dir)


_PID = re.compile(rb"\s*([1-9][0-9]{0,9})\s*")
_PID_MAX = 2**31 - 1


def live_pid(run_dir: Path) -> int | None:
    """The pid of a process still running this run, if any (a killed one leaves a stale file;
    anything in it but a pid, or anything there but a small regular file, is no live run)."""
    recorded = _recorded_pid(run_dir / LOCK)
    if recorded is None:
        return None
    pid, written = recorded
    if pid == os.getpid() or not _alive(pid):
        return None
    # A killed run's file outlives it, and its pid may since name another process.
    return None if _started_after(pid, written) else pid


def _recorded_pid(path: Path) -> tuple[int, float] | None:
    """The pid in `path` and when it was written; None unless it is a regular file holding a
    pid alone (a symbolic link, a FIFO or a device is not opened for reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        found = _PID.fullmatch(fh.read(64))
    if found is None or int(found[1]) > _PID_MAX:
        return None
    return int(found[1]), info.st_mtime


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    return True


def _started_after(pid: int, moment: float) -> bool:
    """Whether process `pid` started after `moment` (so it did not write a file then); False
    where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # starttime, field 22: clock ticks after boot
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, ValueError, IndexError, StopIteration):
        return False
    return boot + ticks / os.sysconf("SC_CLK_TCK") > moment + 1.0  # btime is whole seconds
