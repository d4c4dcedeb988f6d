"""JSONL events, one per line, written through structlog and flushed after every event.

Each line goes out in one `write` followed by `flush`, so a process killed with SIGKILL leaves
a file whose every line is a complete event.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import structlog

from swarmflow.core.events import EventBase, parse_event


def _render(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> bytes:
    # The line is already serialised (and scrubbed) by the event log; structlog only writes it.
    line: str = event_dict["event"]
    return line.encode()


class JsonlSink:
    """Appends events to a JSONL file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("ab")
        self._logger = structlog.wrap_logger(
            structlog.BytesLogger(self._fh), processors=[_render], cache_logger_on_first_use=True
        )

    def write(self, event: EventBase, line: str) -> None:
        self._logger.msg(line)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_events(path: str | Path) -> Iterator[EventBase]:
    """Parse a JSONL event log back into event models."""
    with Path(path).open("rb") as fh:
        for raw in fh:
            if raw.strip():
                yield parse_event(raw)
