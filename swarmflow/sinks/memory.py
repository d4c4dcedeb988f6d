"""Keeps every event in a list."""

from __future__ import annotations

from swarmflow.core.events import EventBase


class MemorySink:
    """An in-memory event sink."""

    def __init__(self) -> None:
        self.events: list[EventBase] = []

    def write(self, event: EventBase | None, line: bytes) -> None:
        if event is not None:  # always an object: this sink wants objects (the default)
            self.events.append(event)

    def close(self) -> None:
        """Nothing to release."""
