"""What the running runs under a folder are doing now, read from their logs: for each run that
has not finished, each session still at work, the last thing it did (its latest timeline
entry) and how long ago, and the model calls in flight.

A batch's or an experiment's progress line says how many runs are done; this says what the
others are doing. Each run's `events.jsonl` and `journal.jsonl` are read as they grow, one new
line at a time (`core.reading.LineTail`): what is kept of a run is its last entry per session
and its calls in flight, never its events, so a watch holds little however long a run goes.

A model call is in flight from its `model_call_started` journal record (written right before
it is sent) until its `model_call_finished` record (`model_call_failed` when its model raised);
the calls a process started are dropped when another opens the journal (a resumed run: that
process is gone), and only the calls of a session still at work are counted.
Both files are written at the run's write barriers, so what they say lags the run by at most
the time to its next model call, tool run or end.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from swarmflow.core.reading import LineTail, Unreadable, json_value
from swarmflow.record.events import RunFinished, SessionEnded, parse_event
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.report.timeline import Entry, Timeline

MAX_RUNS = 2000
"""The most run directories one watch looks at."""
_CALL_RECORDS = (
    b'"model_call_started"',
    b'"model_call_finished"',
    b'"model_call_failed"',
    b'"journal_opened"',
)
"""The kinds of record a watch reads, found at a record's head, where its `kind` is (the other
records hold whole products: they are not parsed)."""

CallKey = tuple[str, str, str, str]
"""A model call's journal key: branch, agent, purpose, digest."""


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
    calling: int = 0
    """Model calls of its agent on its branch in flight now."""

    def line(self) -> str:
        ago = max(0.0, self.run_seconds - self.at)
        calling = f", calling the model ({self.calling})" if self.calling else ""
        return f"{self.run} {self.lane}: {self.last} ({ago:.0f}s ago){calling}"


@dataclass
class _Run:
    """What one run's logs have said so far, folded line by line as they grow."""

    events: LineTail
    journal: LineTail
    made: Timeline = field(default_factory=Timeline)
    last: dict[str, Entry] = field(default_factory=dict)
    """Session -> its latest timeline entry."""
    where: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Session still at work -> its branch and agent."""
    open: Counter[CallKey] = field(default_factory=Counter)
    """Model calls started by the process writing the journal and not finished."""
    t: float = 0.0
    finished: bool = False

    def read(self) -> None:
        if self.finished:
            return
        for _number, raw in _lines(self.events):
            self._take_event(raw)
        for _number, raw in _lines(self.journal):
            if any(kind in raw[:48] for kind in _CALL_RECORDS):
                self._take_record(raw)

    def _take_event(self, raw: bytes) -> None:
        try:
            event = parse_event(raw)
        except (ValidationError, ValueError):  # not an event: the report's reader says so
            return
        self.t = event.t
        if isinstance(event, RunFinished):
            self.finished = True
        if not event.session:
            return
        if isinstance(event, SessionEnded):
            self.where.pop(event.session, None)
            self.last.pop(event.session, None)
            return
        self.where[event.session] = (event.branch, event.agent or "")
        entry = self.made.entry(event)
        if entry is not None:
            self.last[event.session] = entry

    def _take_record(self, raw: bytes) -> None:
        try:
            record = json_value(raw)
            kind, key = record["kind"], record.get("key") or {}
            call = (key.get("branch", ""), key.get("agent", ""), key.get("purpose", ""),
                    key.get("digest", ""))  # fmt: skip
        except (ValueError, TypeError, KeyError, AttributeError):
            return
        if kind == "journal_opened":  # a new process: the calls of the one before are gone
            self.open.clear()
        elif kind == "model_call_started":
            self.open[call] += 1
        elif kind in ("model_call_finished", "model_call_failed") and self.open[call] > 0:
            self.open[call] -= 1

    def working(self, name: str) -> list[AtWork]:
        if self.finished:
            return []
        calling = Counter[tuple[str, str]]()
        for (branch, agent, _purpose, _digest), count in self.open.items():
            calling[(branch, agent)] += count
        return [
            AtWork(name, e.lane, e.text, e.end, self.t, calling[self.where[s]])
            for s, e in self.last.items()
            if s in self.where
        ]

    def in_flight(self) -> int:
        """The calls in flight of the sessions at work."""
        at_work = set(self.where.values())
        return (
            0
            if self.finished
            else sum(count for key, count in self.open.items() if (key[0], key[1]) in at_work)
        )


def calls_by_arm(calls: dict[str, int]) -> dict[str, int]:
    """Calls in flight by run (`RunWatch.in_flight`) summed per experiment arm, the runs of a
    best-of arm's candidates (`arms/<arm>.c2/runs/...`) under their own batch's name."""
    arms: Counter[str] = Counter()
    for run, count in calls.items():
        parts = run.split("/")
        if len(parts) >= 3 and parts[0] == "arms":
            arms[parts[1]] += count
    return dict(arms)


def _lines(tail: LineTail) -> Iterator[tuple[int, bytes]]:
    try:
        yield from tail.lines()
    except Unreadable:  # not there yet (a journal before its first record), or not a file
        return


class RunWatch:
    """The sessions at work in the runs under `root` (`runs/*`, `arms/*/runs/*`, or its own
    folders that hold a log)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._runs: dict[Path, _Run] = {}

    def at_work(self) -> list[AtWork]:
        """Every session at work now, run by run."""
        found: list[AtWork] = []
        for run_dir in _run_dirs(self.root):
            found.extend(self._read(run_dir).working(self._name(run_dir)))
        return found

    def in_flight(self) -> dict[str, int]:
        """The model calls in flight now, by run (relative to the watched folder), in every
        run that has one, as `at_work` last read them."""
        found = {self._name(d): run.in_flight() for d, run in self._runs.items()}
        return {name: count for name, count in found.items() if count}

    def _read(self, run_dir: Path) -> _Run:
        run = self._runs.get(run_dir)
        if run is None:
            events = LineTail(run_dir / EVENTS_FILE, "an event log")
            journal = LineTail(run_dir / JOURNAL_FILE, "a run journal")
            run = self._runs[run_dir] = _Run(events, journal)
        run.read()
        return run

    def _name(self, run_dir: Path) -> str:
        return run_dir.relative_to(self.root).as_posix()


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


__all__ = ["AtWork", "RunWatch", "calls_by_arm", "file_mark"]
