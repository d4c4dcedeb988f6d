"""The port every event sink implements (memory, JSONL, OpenTelemetry, a progress display)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from swarmflow.record.events import EventBase


@runtime_checkable
class EventSink(Protocol):
    """Receives every event, in order. `line` is the event's scrubbed JSON, UTF-8 encoded.

    A sink that writes a file may hold lines until its optional `flush()`, which the run calls
    before every external effect and at its end (the write-ahead rule, docs/durability.md).
    A line may keep the larger buffer it was serialised into: a sink that keeps lines keeps
    copies (`record.jsonline.own_bytes`).
    """

    def write(self, event: EventBase | None, line: bytes) -> None:
        """`event` is None for sinks that declare `wants_objects = False` or that list the
        `event_types` they want and this is not one of them."""

    def close(self) -> None: ...
