"""Event sinks: in-memory and JSONL."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.record.sinks.jsonl import JsonlSink as JsonlSink
    from swarmflow.record.sinks.jsonl import read_events as read_events
    from swarmflow.record.sinks.memory import MemorySink as MemorySink

export_lazily(__name__)
