"""JSONL events, one per line, written through structlog at the run's write barriers.

The lines of the events recorded between two external effects are held and go out together,
in one `write(2)`, when `flush` is called: the run calls it before every model call, tool run,
commit and question (the write-ahead rule, docs/durability.md) and when it ends. A process
killed with SIGKILL leaves a file whose every line is a complete event, and every effect that
started had every event before it on disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from swarmflow.record.events import EventBase, parse_event


class JsonlSink:
    """Appends events to a JSONL file."""

    wants_objects = False  # it writes the serialised line only
    fsync = False
    """Sync the file to disk at every flush (`run(durability="fsync")`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered: each flush is one write(2); what is held is held here, in `_held`.
        self._fh = self.path.open("ab", buffering=0)
        self._held: list[bytes] = []
        # The event log has already serialised and scrubbed the line, so structlog's processor
        # chain has nothing left to do: its BytesLogger writes and flushes each line directly.
        import structlog  # only when a run writes a log: keeps `import swarmflow` cheap

        self._msg = structlog.BytesLogger(self._fh).msg

    def write(self, event: EventBase | None, line: bytes) -> None:
        self._held.append(line)

    def flush(self) -> None:
        """Write every held line, in one write(2) (and sync it with `fsync`)."""
        if not self._held:
            return
        lines = b"\n".join(self._held)
        self._held.clear()
        self._msg(lines)  # structlog adds the last newline and flushes
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.flush()
            self._fh.close()


def read_events(path: str | Path) -> Iterator[EventBase]:
    """Parse a JSONL event log back into event models."""
    with Path(path).open("rb") as fh:
        for raw in fh:
            if raw.strip():
                yield parse_event(raw)
