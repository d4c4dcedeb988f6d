"""Many runs at once: `batch` over 1,000 flows of 8 agents whose model calls take 1 s each.

Each flow fans out to its 8 agents (one call each), so one flow's critical path is one call.
With `concurrency` runs at once the ideal wall time is ceil(flows / concurrency) call
latencies; the figure is measured wall time / that ideal, so it shows what running, journaling
and recording every run costs on top of the model calls. One timed batch of about 20 s (quick:
100 flows, about 2 s); the latency is not scaled down in quick mode, since the figure is about
latency-bound work.

The same batch then runs on Ray (`on="ray"`, when `swarmflow[ray]` is installed) on a local
head started first with one CPU per core: the timed call includes starting the batch's actors
and killing them, as every Ray batch pays it. At the smoke test's size it is skipped (starting
Ray takes longer than the whole case).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import anyio

from benchmarks._harness import Row, Settings, Target
from benchmarks.cases._common import function_model, reply, runs_folder
from swarmflow import Agent, Ok, Team, agent, batch, flow, parallel
from swarmflow.testing import FunctionModel

CALL_LATENCY = 1.0
AGENTS = 8
FLOWS = {"full": 1_000, "quick": 100}
"""Flows by settings name; any other size (the test suite's smoke run) uses 10 flows and the
settings' time scale."""
CONCURRENCY = 50
"""Runs at once: each run costs some milliseconds of CPU (events, journal, sessions), so at a
higher concurrency on one core the CPU, not the model, becomes the bound."""
BATCH_RATIO_TARGET = 1.1
RAY_RATIO_TARGET = 1.3

TEAM = Team([Agent(f"a{i}") for i in range(AGENTS)])


@flow(team=TEAM)
async def eight_agents(task: int) -> int:
    """One call to each of the 8 agents at once; returns how many answered."""
    outcomes = await parallel(lambda i: agent(f"a{i}", f"task {task} part {i}"), n=AGENTS)
    return sum(isinstance(o, Ok) for o in outcomes)


def slow_model(latency: float) -> FunctionModel:
    return function_model(lambda _request: reply("ok", latency))


async def _timed_batch(root: Path, flows: int, latency: float, on: str = "local") -> float:
    tasks = [{"task": i} for i in range(flows)]
    started = time.perf_counter()
    result = await batch(
        eight_agents, tasks, out=root / "batch", concurrency=CONCURRENCY,
        model=slow_model(latency), events="jsonl", on=on,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if result.counts() != {"ok": flows}:
        raise RuntimeError(f"the batch did not finish every flow: {result.summary()}")
    return wall


def bench(settings: Settings) -> list[Row]:
    flows = FLOWS.get(settings.name, 10)
    latency = CALL_LATENCY * (1.0 if settings.name in FLOWS else settings.time_scale)
    ideal = math.ceil(flows / CONCURRENCY) * latency
    with runs_folder() as root:
        wall = anyio.run(_timed_batch, root, flows, latency)
    name = f"{flows} flows x {AGENTS} agents, {latency * 1000:g} ms calls"
    name += f", concurrency {CONCURRENCY}"
    return [
        Row(
            f"batch {name}",
            "wall / critical path",
            "x",
            wall / ideal,
            note=f"wall {wall:.2f} s, critical path {ideal:.2f} s",
            target=Target(BATCH_RATIO_TARGET),
        ),
        _on_ray(settings, name, flows, latency, ideal),
    ]


def _on_ray(settings: Settings, name: str, flows: int, latency: float, ideal: float) -> Row:
    case, metric, target = f"batch on ray {name}", "wall / critical path", Target(RAY_RATIO_TARGET)
    if settings.name not in FLOWS:
        return Row(case, metric, "x", None, note="skipped at this size", target=target)
    try:
        import ray
    except ImportError:
        return Row(case, metric, "x", None, note="Ray is not installed: pip install "
                   "'swarmflow[ray]'", target=target)  # fmt: skip
    cpus = os.cpu_count() or 1
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    try:
        with runs_folder() as root:
            wall = anyio.run(_timed_batch, root, flows, latency, "ray")
    finally:
        ray.shutdown()
    note = f"wall {wall:.2f} s, critical path {ideal:.2f} s, {cpus} worker actors"
    return Row(case, metric, "x", wall / ideal, note=note, target=target)
