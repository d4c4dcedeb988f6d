"""Report: `swarmflow report RUN_DIR` of a long run's log, at two sizes, in fresh interpreters.

The log is made here, written as the run's JSONL sink writes it: four agents in eight sessions
taking turns of a model call that asks for a shell command, the command's result (400
characters), a second model call and a message to a teammate, until the log holds N events
(the report's every section has something to show: tokens, shares, the message matrix, the
timeline, adherence). Each size is reported by `report_from_dir` in a child interpreter, so
that nothing the parent holds is counted: one timed run, then one under `tracemalloc`, whose
peak is taken above what was live after the imports and a warm-up report of a small log.

Target: the peak is flat in the number of events. Between N and 10N events it may grow by at
most 64 bytes per added event (the token shares keep every model call's time, agent and
tokens, 20 bytes a call; a report that held the events grew by about 4 KB per event).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks._harness import Row, Settings, Target
from benchmarks.cases._common import runs_folder
from swarmflow.record.events import (
    EventBase,
    MessageSent,
    ModelCalled,
    RunFinished,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolExecuted,
)
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.jsonline import json_line

CASE = "report"
GROWTH_TARGET = 64.0
"""Bytes of peak memory per added event, between the two sizes."""
AGENTS = ("planner", "coder", "reviewer", "tester")
SESSIONS = 8
RESULT = "collected 12 items\n" + "tests/test_x.py ........ [100%]\n" * 12 + "12 passed in 0.4s"
CHILD = """
import json, sys, time, tracemalloc
from swarmflow.report import report_from_dir

report_from_dir(sys.argv[2])  # the imports, and the event models' schemas built
started = time.perf_counter()
text = report_from_dir(sys.argv[1])
seconds = time.perf_counter() - started
tracemalloc.start()
live = tracemalloc.get_traced_memory()[0]
report_from_dir(sys.argv[1])
peak = tracemalloc.get_traced_memory()[1] - live
tracemalloc.stop()
print(json.dumps({"seconds": seconds, "peak": peak, "lines": text.count(chr(10))}))
"""


class _Clock:
    """The envelope of each next event: sequence number and time."""

    def __init__(self) -> None:
        self.seq = 0

    def next(self, agent: str | None = None, session: str | None = None) -> dict[str, Any]:
        self.seq += 1
        t = self.seq * 0.01
        return {
            "run_id": "bench",
            "seq": self.seq - 1,
            "ts": 1.7e9 + t,
            "t": t,
            "agent": agent,
            "session": session,
        }


def _call(prompt: int) -> dict[str, Any]:
    """A model call's figures, its prompt repeating the session's previous one."""
    return {
        "model": "bench",
        "tokens_in": prompt,
        "tokens_out": 40,
        "cost": 0.0002,
        "prompt_tokens": prompt,
        "prefix_tokens": prompt - 1,
    }


def _turn(clock: _Clock, number: int) -> Iterator[EventBase]:
    """One session's turn: a call, its shell command, a second call, a message on."""
    index = number % SESSIONS
    agent, session = AGENTS[index % len(AGENTS)], f"s{index}"
    teammate = AGENTS[(index + 1) % len(AGENTS)]
    prompt = 1_000 + 2 * number  # each call's prompt keeps the one before it as its prefix
    asks = {"step": 2 * number, "tool_calls": ["run_shell"]}
    yield ModelCalled(**clock.next(agent, session), **asks, **_call(prompt))
    yield ToolExecuted(
        **clock.next(agent, session),
        tool="run_shell",
        call_id=f"c{number}",
        arguments={"command": "pytest -q"},
        result=RESULT,
        duration=0.2,
    )
    yield ModelCalled(**clock.next(agent, session), step=2 * number + 1, **_call(prompt + 1))
    yield MessageSent(
        **clock.next(agent, session), source=agent, target=teammate, text=f"turn {number} done"
    )


def events_of(n: int) -> Iterator[EventBase]:
    """A run of about `n` events."""
    clock = _Clock()
    edges = [(a, AGENTS[(i + 1) % len(AGENTS)]) for i, a in enumerate(AGENTS)]
    roles = {a: {"tools": ["run_shell"], "allowance": None} for a in AGENTS}
    yield RunStarted(**clock.next(), flow="bench", agents=list(AGENTS), edges=edges, roles=roles)
    for index in range(SESSIONS):
        agent = AGENTS[index % len(AGENTS)]
        yield SessionStarted(**clock.next(agent, f"s{index}"), model="bench")
    for number in range(max(1, (n - 2 * SESSIONS - 2) // 4)):
        yield from _turn(clock, number)
    for index in range(SESSIONS):
        agent = AGENTS[index % len(AGENTS)]
        yield SessionEnded(**clock.next(agent, f"s{index}"), state="done", reason="finished")
    yield RunFinished(**clock.next(), status="ok", output="done", seconds=clock.seq * 0.01)


def write_log(run_dir: Path, n: int) -> int:
    """A run directory whose log holds about `n` events; how many it holds."""
    run_dir.mkdir(parents=True)
    count = 0
    with (run_dir / EVENTS_FILE).open("wb") as fh:
        for event in events_of(n):
            fh.write(json_line(event) + b"\n")
            count += 1
    return count


def report_in_child(run_dir: Path, warm_up: Path) -> dict[str, float]:
    """Seconds and traced peak bytes of one `report_from_dir`, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(run_dir), str(warm_up)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def bench(settings: Settings) -> list[Row]:
    small, large = settings.report_events
    rows: list[Row] = []
    peaks: dict[int, float] = {}
    with runs_folder() as root:
        write_log(root / "warm-up", 50)
        for size in (small, large):
            count = write_log(root / f"n{size}", size)
            figures = report_in_child(root / f"n{size}", root / "warm-up")
            peaks[count] = figures["peak"]
            label = f"{CASE} of a {count:,}-event log"
            rows.append(Row(label, "peak memory (traced)", "MB", figures["peak"] / 1e6))
            rows.append(Row(label, "time per event", "us", figures["seconds"] * 1e6 / count))
    (n_small, peak_small), (n_large, peak_large) = sorted(peaks.items())
    growth = max(0.0, peak_large - peak_small) / (n_large - n_small)
    rows.append(
        Row(
            f"{CASE} {n_large:,} vs {n_small:,} events",
            "peak growth per added event",
            "B",
            growth,
            target=Target(GROWTH_TARGET),
            note="flat: the report holds folds, not events",
        )
    )
    return rows
