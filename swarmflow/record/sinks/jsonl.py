"""JSONL events, one per line, written at the run's write barriers.

The lines of the events recorded between two external effects are held and go out together,
in one `write(2)`, when `flush` is called (`record.lines`, the writer the journal uses too):
the run calls it before every model call, tool run, commit and question (the write-ahead
rule, docs/durability.md) and when it ends. A process killed with SIGKILL leaves a file whose
every line is a complete event, and every effect that started had every event before it on
disk. The event log has rendered (through structlog's processor chain) and scrubbed each line
already: the sink writes it as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from swarmflow.core import reading
from swarmflow.record.events import EventBase, parse_event
from swarmflow.record.lines import LineWriter


class JsonlSink(LineWriter):
    """Appends events to a JSONL file (`fsync`: sync it at every flush, `durability="fsync"`)."""

    wants_objects = False  # it writes the serialised line only

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(path)

    def write(self, event: EventBase | None, line: bytes) -> None:
        self._keep(line)  # scrubbed by the event log already


def read_events(path: str | Path) -> Iterator[EventBase]:
    """Parse a JSONL event log back into event models (read by the one reader: a torn last
    line is left out)."""
    for _, raw in reading.lines(Path(path), "an event log"):
        yield parse_event(raw)
