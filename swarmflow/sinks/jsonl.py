"""JSONL events, one per line, written through structlog and flushed after every event.

Each line goes out in one `write` followed by `flush`, so a process killed with SIGKILL leaves
a file whose every line is a complete event.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from swarmflow.core.events import EventBase, parse_event


class JsonlSink:
    """Appends events to a JSONL file."""

    wants_objects = False  # it writes the serialised line only
    fsync = False
    """Sync every line to disk as it is written (`run(durability="fsync")`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered: each event is one write(2), so nothing sits in a user-space buffer.
        self._fh = self.path.open("ab", buffering=0)
        # The event log has already serialised and scrubbed the line, so structlog's processor
        # chain has nothing left to do: its BytesLogger writes and flushes each line directly.
        import structlog  # only when a run writes a log: keeps `import swarmflow` cheap

        self._msg = structlog.BytesLogger(self._fh).msg

    def write(self, event: EventBase | None, line: bytes) -> None:
        self._msg(line)
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_events(path: str | Path) -> Iterator[EventBase]:
    """Parse a JSONL event log back into event models."""
    with Path(path).open("rb") as fh:
        for raw in fh:
            if raw.strip():
                yield parse_event(raw)
