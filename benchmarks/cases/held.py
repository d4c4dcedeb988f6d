"""Lines held between two write barriers: N events recorded with no barrier between them (the
ends of a fan-out's branches that all waited at once), then one flush; CPU per event, at the
report case's two sizes (`report_events`).

Baseline: the same lines serialised, appended to a list and joined once. The cost per event
must not grow with what is held: the ratio of the larger size's to the smaller's is held to
1.5 (joining everything held at every 32nd line made it 6.6 at the default sizes).
"""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks._harness import Probe, Row, Settings, Target, Timings, alternate
from benchmarks.cases._common import runs_folder
from swarmflow.record.eventlog import EventLog
from swarmflow.record.events import BranchFinished
from swarmflow.record.jsonline import json_line
from swarmflow.record.sinks import JsonlSink

CASE = "held"
SCALING_TARGET = 1.5


def _held(root: Path, n: int) -> Probe:
    async def probe() -> Timings:
        sink = JsonlSink(root / f"events-{n}.jsonl")
        log = EventLog("run", [sink])
        started = time.process_time()
        for i in range(n):
            log.emit(BranchFinished, branch=f"parallel[{i}]", outcome="ok", error=None)
        log.flush()
        spent = time.process_time() - started
        log.close()
        (root / f"events-{n}.jsonl").unlink()
        return {"cpu": spent / n}

    return probe


def _joined_once(n: int) -> Probe:
    async def probe() -> Timings:
        started = time.process_time()
        lines = []
        for i in range(n):
            lines.append(json_line({"type": "branch_finished", "branch": f"parallel[{i}]"}))
        b"\n".join(lines)
        return {"cpu": (time.process_time() - started) / n}

    return probe


def bench(settings: Settings) -> list[Row]:
    rows = []
    per_event: dict[int, float] = {}
    with runs_folder() as root:
        for n in settings.report_events:
            paired = alternate(_held(root, n), _joined_once(n), settings)
            per_event[n] = paired.swarmflow["cpu"]
            rows.append(
                Row(
                    f"{CASE} {n:,} events",
                    "CPU per event held until one barrier",
                    "us",
                    paired.swarmflow["cpu"] * 1e6,
                    paired.baseline["cpu"] * 1e6,
                    note="baseline: the lines serialised and joined once",
                )
            )
    small, large = settings.report_events
    ratio = per_event[large] / per_event[small]
    rows.append(
        Row(
            CASE,
            f"per event: {large:,} held / {small:,} held",
            "x",
            ratio,
            target=Target(SCALING_TARGET),
            ratio=ratio,
        )
    )
    return rows
