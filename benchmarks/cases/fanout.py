"""Fan-out and fan-in: `parallel` over N branches, one zero-latency model call each.

swarmflow: one `run()` of a flow whose body is `parallel(lambda i: agent("worker", ...), n=N)`
(a real agent session per branch, the JSONL event sink on). The whole `run()` is timed; the
`parallel` call alone is also timed inside the flow, which separates the run's set-up.
Baseline: `asyncio.gather` of N coroutines, each awaiting the fake model once.

Memory: a separate run under tracemalloc in which every model call waits at a gate until all
N branches have arrived, so the peak holds N branches in flight; peak / N per branch.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import anyio

from benchmarks._harness import (
    Paired,
    Probe,
    Row,
    Settings,
    Target,
    Timings,
    alternate,
    mean_of,
    peak_bytes,
    repeats_for,
)
from benchmarks.cases._common import (
    TEAM,
    WORKER,
    Gate,
    fake_call,
    gated_call,
    gated_model,
    run_flow,
    runs_folder,
    zero_latency_model,
)
from swarmflow import Ok, agent, flow, parallel

CASE = "fanout"
SCALING_TARGET = 1.5
MEMORY_TARGET_KB = 6.0
TARGET_SIZES = (1_000, 10_000)


@flow(team=TEAM)
async def fan_out(n: int) -> float:
    """Fan out n one-call branches and join them; returns the seconds `parallel` took."""
    started = time.perf_counter()
    outcomes = await parallel(lambda i: agent(WORKER, f"task {i}"), n=n)
    inner = time.perf_counter() - started
    failed = [o for o in outcomes if not isinstance(o, Ok)]
    if failed:
        raise RuntimeError(f"{len(failed)} of {n} branches did not succeed: {failed[0]!r}")
    return inner


async def _gather(n: int) -> list[object]:
    return list(await asyncio.gather(*(fake_call(f"task {i}") for i in range(n))))  # noqa: TID251


def _swarmflow_probe(n: int, root: Path) -> Probe:
    async def probe() -> Timings:
        wall, result = await run_flow(fan_out, zero_latency_model(), root, n=n)
        return {"wall": wall, "inner": float(result.output)}

    return probe


def _baseline_probe(n: int) -> Probe:
    return mean_of(lambda: _gather(n), repeats_for(n))


def time_fanout(n: int, settings: Settings, root: Path) -> Paired:
    """Median seconds for one fan-out of n branches, swarmflow and baseline."""
    return alternate(_swarmflow_probe(n, root), _baseline_probe(n), settings)


def memory_per_branch(n: int, root: Path) -> tuple[float, float]:
    """Peak bytes per in-flight branch: swarmflow, baseline."""

    async def ours() -> Timings:
        await run_flow(fan_out, gated_model(Gate(n)), root, n=n)
        return {}

    async def theirs() -> Timings:
        gate = Gate(n)
        await asyncio.gather(*(gated_call(gate, f"task {i}") for i in range(n)))  # noqa: TID251
        return {}

    return peak_bytes(ours) / n, peak_bytes(theirs) / n


def anyio_task_bytes(n: int) -> float:
    """Peak bytes per task of the baseline's gated calls run in an anyio task group instead:
    what the task-group primitive itself costs a branch, before any of swarmflow's work."""

    async def tasks() -> Timings:
        gate = Gate(n)
        async with anyio.create_task_group() as group:
            for i in range(n):
                group.start_soon(gated_call, gate, f"task {i}")
        return {}

    return peak_bytes(tasks) / n


def _timing_rows(n: int, paired: Paired) -> list[Row]:
    us = 1e6 / n
    ours, theirs = paired.swarmflow, paired.baseline
    return [
        Row(
            f"{CASE} N={n:,}",
            "per branch, whole run()",
            "us",
            ours["wall"] * us,
            theirs["wall"] * us,
            note="target: half of each peer's (make bench-peers)" if n in TARGET_SIZES else "",
        ),
        Row(
            f"{CASE} N={n:,}",
            "per branch, parallel() only",
            "us",
            ours["inner"] * us,
            theirs["wall"] * us,
            note="excludes run set-up",
        ),
    ]


def _scaling_row(per_branch: dict[int, float]) -> Row | None:
    small, large = TARGET_SIZES
    if small not in per_branch or large not in per_branch:
        return None
    ratio = per_branch[large] / per_branch[small]
    return Row(
        CASE,
        f"scaling: per branch N={large:,} / N={small:,}",
        "x",
        ratio,
        target=Target(SCALING_TARGET),
        ratio=ratio,
    )


def _memory_rows(settings: Settings, root: Path) -> list[Row]:
    rows = []
    for n in settings.memory_sizes:
        ours, theirs = memory_per_branch(n, root)
        in_anyio = anyio_task_bytes(n)
        rows.append(
            Row(
                f"{CASE} N={n:,}",
                "peak memory per in-flight branch",
                "KB",
                ours / 1024,
                theirs / 1024,
                Target(MEMORY_TARGET_KB),
                note=f"the same calls as anyio tasks: {in_anyio / 1024:.2f} KB",
            )
        )
    return rows


def bench(settings: Settings) -> list[Row]:
    rows: list[Row] = []
    per_branch: dict[int, float] = {}
    with runs_folder() as root:
        for n in settings.fanout_sizes:
            paired = time_fanout(n, settings, root)
            per_branch[n] = paired.swarmflow["wall"] / n
            rows.extend(_timing_rows(n, paired))
        scaling = _scaling_row(per_branch)
        if scaling is not None:
            rows.append(scaling)
        rows.extend(_memory_rows(settings, root))
    return rows
