"""Event sinks: in-memory and JSONL."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.sinks.jsonl import JsonlSink, read_events
    from swarmflow.sinks.memory import MemorySink

export_lazily(
    __name__,
    {
        "swarmflow.sinks.jsonl": ("JsonlSink", "read_events"),
        "swarmflow.sinks.memory": ("MemorySink",),
    },
)

__all__ = ["JsonlSink", "MemorySink", "read_events"]
