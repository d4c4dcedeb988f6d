"""Keeps every event of a run, in order, and builds their models when they are read."""

from __future__ import annotations

from swarmflow.record.events import EventBase, parse_event
from swarmflow.record.jsonline import own_bytes


class MemorySink:
    """An in-memory event sink.

    It keeps each event's line and parses it into its model on first read: most runs never
    read their events back, and building a pydantic model of each one as it happens cost
    about a tenth of a zero-latency model call.
    """

    wants_objects = False  # the line is enough: `events` builds the models from it

    def __init__(self) -> None:
        self._events: list[EventBase] = []
        self._unread: list[bytes] = []

    @property
    def events(self) -> list[EventBase]:
        """Every event so far, in order (each line is parsed once)."""
        if self._unread:
            self._events.extend(parse_event(line) for line in self._unread)
            self._unread.clear()
        return self._events

    def write(self, event: EventBase | None, line: bytes) -> None:
        self._unread.append(own_bytes(line))  # kept for the run: not in the serialiser's buffer

    def close(self) -> None:
        """Nothing to release."""
