"""A line keeps the whole buffer it was serialised into (4 KB for a short event): the sinks
that keep lines keep them in bytes of their own size, so a run that holds thousands of
events between two write barriers, or keeps all of them, holds about their size."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from swarmflow.record.eventlog import EventLog
from swarmflow.record.events import BranchFinished
from swarmflow.record.sinks import JsonlSink, MemorySink

EVENTS = 2_000


def _held_per_event(log: EventLog) -> float:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(EVENTS):  # no flush: every line stays held
            log.emit(BranchFinished, branch=f"parallel[{i}]", outcome="ok", error=None)
        return (tracemalloc.get_traced_memory()[0] - before) / EVENTS
    finally:
        tracemalloc.stop()


def test_lines_held_until_a_barrier_take_about_their_size(tmp_path: Path) -> None:
    jsonl = JsonlSink(tmp_path / "events.jsonl")
    held = _held_per_event(EventLog("run", [jsonl]))
    assert held < 1_000  # a 4 KB buffer per line would be over 4,000
    jsonl.close()
    lines = (tmp_path / "events.jsonl").read_bytes().splitlines()
    assert len(lines) == EVENTS and b'"branch":"parallel[1999]"' in lines[-1]


def test_the_memory_sink_keeps_lines_of_their_own_size(tmp_path: Path) -> None:
    memory = MemorySink()
    log = EventLog("run", [memory, JsonlSink(tmp_path / "events.jsonl")])
    held = _held_per_event(log)
    log.close()
    assert held < 1_500  # over 4,000 with the buffer kept: the two sinks share one line
    assert [e.branch for e in memory.events[:2]] == ["parallel[0]", "parallel[1]"]
