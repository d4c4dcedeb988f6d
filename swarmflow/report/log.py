"""Reading a run's `events.jsonl` back, tolerating a log cut short by a killed process.

A log is read up to its last complete, valid line. What follows it (a torn final line, or a
line that is not an event) is left out, and the reading says so. A file whose first line is
not an event is not a run's log at all: `LogError`, with one line saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from swarmflow.core.errors import SwarmflowError
from swarmflow.record.events import EventBase, parse_event
from swarmflow.record.files import EVENTS_FILE


class LogError(SwarmflowError):
    """A path that holds no readable event log."""


@dataclass(frozen=True)
class RunLog:
    """The events of one run, and what had to be left out of its log."""

    path: Path
    events: list[EventBase]
    stopped_at: int | None = None
    """The 1-based line where reading stopped early (a torn or foreign line), else None."""
    problem: str = ""

    @property
    def truncated(self) -> bool:
        return self.stopped_at is not None

    def note(self) -> str:
        """One line saying what was left out, or ''."""
        if self.stopped_at is None:
            return ""
        return (
            f"log truncated: read {len(self.events)} events, up to line {self.stopped_at - 1}; "
            f"line {self.stopped_at} {self.problem}"
        )


def log_path(path: str | Path) -> Path:
    """`RUN_DIR/events.jsonl` for a run directory, the path itself for a file."""
    given = Path(path)
    return given / EVENTS_FILE if given.is_dir() else given


def read_log(path: str | Path) -> RunLog:
    """The events of the log at `path` (a run directory or the JSONL file itself)."""
    file = log_path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        where = f"{path} holds no {EVENTS_FILE}" if Path(path).is_dir() else f"no such file: {path}"
        raise LogError(f"{where} (not a run directory?)") from None
    except OSError as exc:
        raise LogError(f"cannot read {file}: {exc.strerror or exc}") from None
    events: list[EventBase] = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        event = _parse(raw)
        if event is None:
            if not events:
                raise LogError(
                    f"{file} is not a swarmflow event log: line {number} is not an event"
                )
            last = number == len(lines)  # every event ends with a newline; this one did not
            problem = "was cut off before its end" if last else "is not an event"
            return RunLog(file, events, number, problem)
        events.append(event)
    if not events:
        raise LogError(f"{file} is empty: the run recorded no events")
    return RunLog(file, events)


def _parse(raw: bytes) -> EventBase | None:
    try:
        return parse_event(raw)
    except (ValidationError, ValueError):
        return None
