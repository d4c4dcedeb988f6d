"""What the running runs under a folder are doing now, read from their logs: for each run that
has not finished, each session still at work and the last thing it did (its latest timeline
entry), and how long ago.

A batch's or an experiment's progress line says how many runs are done; this says what the
others are doing. Each log is read through the report's reader, and again only when it grew
(a finished run is read once).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from swarmflow.record.events import RunFinished, SessionEnded
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report.log import LogError, read_log
from swarmflow.report.timeline import Entry, Timeline

MAX_RUNS = 2000
"""The most run directories one watch looks at."""


@dataclass(frozen=True, slots=True)
class AtWork:
    """One session still at work in a running run."""

    run: str
    """The run directory, relative to the watched folder."""
    lane: str
    """The session, as the timeline names it (`coder 1 · coder#4`)."""
    last: str
    """The last thing it did."""
    at: float
    """When, in the run's seconds."""
    run_seconds: float
    """The run's latest event, in the run's seconds (`run_seconds - at`: how long ago)."""

    def line(self) -> str:
        ago = max(0.0, self.run_seconds - self.at)
        return f"{self.run} {self.lane}: {self.last} ({ago:.0f}s ago)"


@dataclass(frozen=True, slots=True)
class _Read:
    mark: tuple[int, int]
    finished: bool
    working: tuple[AtWork, ...]


class RunWatch:
    """The sessions at work in the runs under `root` (`runs/*`, `arms/*/runs/*`, or its own
    folders that hold a log)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[Path, _Read] = {}

    def at_work(self) -> list[AtWork]:
        """Every session at work now, run by run."""
        found: list[AtWork] = []
        for run_dir in _run_dirs(self.root):
            found.extend(self._read_run(run_dir).working)
        return found

    def _read_run(self, run_dir: Path) -> _Read:
        mark = file_mark(run_dir / EVENTS_FILE)
        held = self._read.get(run_dir)
        if held is not None and (held.finished or held.mark == mark):
            return held
        read = _Read(mark, *self._working(run_dir))
        self._read[run_dir] = read
        return read

    def _working(self, run_dir: Path) -> tuple[bool, tuple[AtWork, ...]]:
        try:
            stream = read_log(run_dir).stream()
        except LogError:
            return False, ()
        made, last, ended, t = Timeline(), dict[str, Entry](), set[str](), 0.0
        for event in stream:
            t = event.t
            if isinstance(event, RunFinished):
                return True, ()
            if isinstance(event, SessionEnded) and event.session:
                ended.add(event.session)
            entry = made.entry(event)
            if entry is not None and event.session:
                last[event.session] = entry
        name = run_dir.relative_to(self.root).as_posix()
        return False, tuple(
            AtWork(name, e.lane, e.text, e.end, t) for s, e in last.items() if s not in ended
        )


def _run_dirs(root: Path) -> Iterator[Path]:
    """The run directories under `root`, by name (no symbolic link followed)."""
    count = 0
    for pattern in ("runs/*", "arms/*/runs/*", "*"):
        for path in sorted(root.glob(pattern)):
            if count >= MAX_RUNS:
                return
            if not path.is_symlink() and (path / EVENTS_FILE).is_file():
                count += 1
                yield path


def file_mark(path: Path) -> tuple[int, int]:
    """The file's size and modification time, which change when it is written: a reader that
    keeps what it read with its mark reads again only when the mark changed; (-1, -1) when
    there is no file."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return st.st_size, st.st_mtime_ns


__all__ = ["AtWork", "RunWatch", "file_mark"]
