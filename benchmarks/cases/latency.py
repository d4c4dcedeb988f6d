"""Latency-bound fan-out: 64 branches of one 50 ms call each.

The ideal wall time is one call's latency; the figure is wall time / 0.05 s, so it shows how
much swarmflow's own work adds on top of the calls. Baseline: `asyncio.gather` of 64 sleeps.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks._harness import Row, Settings, Target, alternate
from benchmarks.cases._common import (
    TEAM,
    WORKER,
    fake_slow_call,
    flow_probe,
    function_model,
    plain_probe,
    reply,
    runs_folder,
)
from swarmflow import Ok, agent, flow, parallel
from swarmflow.testing import FunctionModel

CALL_LATENCY = 0.05
LATENCY_RATIO_TARGET = 1.1


@flow(team=TEAM)
async def latency_bound(n: int) -> int:
    """n branches of one slow call each; returns how many succeeded."""
    outcomes = await parallel(lambda i: agent(WORKER, f"task {i}"), n=n)
    return sum(isinstance(o, Ok) for o in outcomes)


def slow_model(latency: float) -> FunctionModel:
    """Every call takes `latency` seconds."""
    return function_model(lambda _request: reply("ok", latency))


async def _sleepers(n: int, latency: float) -> None:
    await asyncio.gather(*(fake_slow_call(f"task {i}", latency) for i in range(n)))  # noqa: TID251


def _latency_rows(settings: Settings, root: Path) -> list[Row]:
    n, latency = settings.latency_branches, CALL_LATENCY * settings.time_scale
    paired = alternate(
        flow_probe(root, latency_bound, lambda: slow_model(latency), n=n),
        plain_probe(_sleepers, n, latency),
        settings,
    )
    ours, theirs = paired.swarmflow["wall"] / latency, paired.baseline["wall"] / latency
    return [
        Row(
            f"latency-bound {n} x {latency * 1000:g} ms",
            "wall / call latency",
            "x",
            ours,
            theirs,
            Target(LATENCY_RATIO_TARGET),
        )
    ]


def bench(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return _latency_rows(settings, root)
