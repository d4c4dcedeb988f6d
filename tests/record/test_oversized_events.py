"""The event log never writes a line its readers refuse: a real `compact()` whose event is
over the cap (made small here; the readers' own is 64 MiB) is written cut, with an
`event_oversized` event after it, and the run reads back as ok; an event no cut can make fit
is left out, the stand-in at its sequence number."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from swarmflow import flow, run
from swarmflow.core import reading
from swarmflow.core.outcomes import Failed
from swarmflow.operators.compact import compact
from swarmflow.record import oversized
from swarmflow.record.eventlog import EventLog
from swarmflow.record.events import EventOversized, RunStarted, parse_event
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.sinks import MemorySink
from swarmflow.testing import FunctionModel

CAP = 200_000
"""The cap these tests write under: an event of a few thousand outcomes is over it."""


@flow
async def many_failures(count: int) -> int:
    failures = [Failed(error=RuntimeError("x" * 250), index=i) for i in range(count)]
    return len(compact(failures))


def test_the_writers_cap_is_within_the_readers() -> None:
    assert oversized.MAX_EVENT_LINE + 1 <= reading.MAX_LINE


async def test_a_compact_over_the_cap_is_written_cut_and_the_run_reads_back_ok(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oversized, "MAX_EVENT_LINE", CAP)
    result = await run(many_failures, count=5_000, model=FunctionModel(lambda r: "ok"),
                       runs_root=tmp_path / "runs")  # fmt: skip
    assert result.status == "ok" and result.run_dir is not None
    lines = (Path(result.run_dir) / EVENTS_FILE).read_bytes().splitlines()
    assert max(map(len, lines)) <= CAP
    events = [parse_event(line) for line in lines]
    assert [e.seq for e in events] == list(range(len(events)))
    (at,) = [i for i, e in enumerate(events) if e.type == "outcomes_compacted"]
    compacted, marker = events[at], events[at + 1]
    assert isinstance(marker, EventOversized)
    assert (marker.event, marker.cut, marker.cap) == ("outcomes_compacted", True, CAP)
    assert marker.size > 5_000 * 250
    assert compacted.kept == 0 and 0 < len(compacted.dropped) < 5_000  # type: ignore[attr-defined]
    command = [sys.executable, "-m", "swarmflow.cli", "report", str(result.run_dir)]
    with anyio.fail_after(120):
        done = await anyio.run_process(command, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert b"unfinished" not in done.stdout


def test_an_event_no_cut_fits_is_left_out_and_stood_in_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(oversized, "MAX_EVENT_LINE", 2_000)
    sink = MemorySink()
    log = EventLog("r1", [sink])
    limits = {f"limit-{i}": i for i in range(1_000)}  # a mapping's keys are never cut
    assert log.emit(RunStarted, flow="f", limits=limits) is None
    log.emit(RunStarted, flow="g")
    first, second = sink.events
    assert isinstance(first, EventOversized)
    assert (first.seq, first.event, first.cut) == (0, "run_started", False)
    assert second.seq == 1 and second.type == "run_started"
