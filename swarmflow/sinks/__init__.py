"""Event sinks: in-memory and JSONL."""

from swarmflow.sinks.jsonl import JsonlSink, read_events
from swarmflow.sinks.memory import MemorySink

__all__ = ["JsonlSink", "MemorySink", "read_events"]
