"""What the journal costs: the same runs with the journal on and off, alternating.

A run with a run directory always keeps a journal (docs/durability.md); the "off" side opens
none, by standing in for the runner's `open_journal` for the length of that run. Each side is
one whole `run()` with the JSONL event log on, timed in CPU seconds of this process (the
work is CPU-bound, and CPU time is what the load of a shared machine disturbs least):

- fan-out: `parallel` over N one-call branches (a record per branch);
- session: one `agent_session`, `send()` called `chain_calls` times (a record per turn);
- agent(): `chain_calls` sequential one-call `agent()` sessions (a record per call).

Target: the journal adds at most 10% (docs/durability.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import swarmflow.runner.lifecycle
from benchmarks._harness import Probe, Row, Settings, Target, Timings, alternate
from benchmarks.cases._common import run_flow, runs_folder, zero_latency_model
from benchmarks.cases.chain import agent_chain, session_chain
from benchmarks.cases.fanout import fan_out
from swarmflow import Flow

CASE = "journal"
OVERHEAD_TARGET = 1.10


@contextmanager
def journal_off() -> Iterator[None]:
    """Runs started inside open no journal."""
    real = swarmflow.runner.lifecycle.open_journal
    swarmflow.runner.lifecycle.open_journal = lambda *_args, **_kw: None  # type: ignore[assignment,return-value]
    try:
        yield
    finally:
        swarmflow.runner.lifecycle.open_journal = real


def _probe(target: Flow[..., Any], root: Path, *, journal: bool, **inputs: Any) -> Probe:
    async def probe() -> Timings:
        started = time.process_time()
        if journal:
            await run_flow(target, zero_latency_model(), root, **inputs)
        else:
            with journal_off():
                await run_flow(target, zero_latency_model(), root, **inputs)
        return {"cpu": time.process_time() - started}

    return probe


def _row(label: str, unit_count: int, on: Timings, off: Timings, per: str) -> Row:
    us = 1e6 / unit_count
    return Row(
        f"{CASE} {label}",
        f"CPU per {per}, journal on (off: baseline)",
        "us",
        on["cpu"] * us,
        off["cpu"] * us,
        Target(OVERHEAD_TARGET, "ratio"),
    )


def bench(settings: Settings) -> list[Row]:
    n, calls = settings.fanout_sizes[min(1, len(settings.fanout_sizes) - 1)], settings.chain_calls
    shapes: list[tuple[str, Flow[..., Any], dict[str, int], int, str]] = [
        (f"fan-out N={n:,}", fan_out, {"n": n}, n, "branch"),
        (f"session x{calls:,}", session_chain, {"calls": calls}, calls, "turn"),
        (f"agent() x{calls:,}", agent_chain, {"steps": calls}, calls, "call"),
    ]
    rows = []
    with runs_folder() as root:
        for label, target, inputs, count, per in shapes:
            paired = alternate(
                _probe(target, root, journal=True, **inputs),
                _probe(target, root, journal=False, **inputs),
                settings,
            )
            rows.append(_row(label, count, paired.swarmflow, paired.baseline, per))
    return rows
