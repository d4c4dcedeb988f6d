"""Latency-bound fan-out: 64 branches of one 50 ms call each, and 1,000 of one 1 s call each.

The ideal wall time is one call's latency (the critical path); the figure is wall time / the
latency, so it shows how much swarmflow's own work adds on top of the calls, the whole `run()`
included. Baseline: `asyncio.gather` of as many sleeps.
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


def _latency_row(n: int, latency: float, settings: Settings, root: Path) -> Row:
    paired = alternate(
        flow_probe(root, latency_bound, lambda: slow_model(latency), n=n),
        plain_probe(_sleepers, n, latency),
        settings,
    )
    ours, theirs = paired.swarmflow["wall"] / latency, paired.baseline["wall"] / latency
    return Row(
        f"latency-bound {n:,} x {latency * 1000:g} ms",
        "wall / call latency",
        "x",
        ours,
        theirs,
        Target(LATENCY_RATIO_TARGET),
    )


def bench(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return [_latency_row(n, latency, settings, root) for n, latency in _shapes(settings)]


def _shapes(settings: Settings) -> list[tuple[int, float]]:
    """(branches, seconds per call) of each shape, at the settings' size and time scale."""
    scale = settings.time_scale
    return [(settings.latency_branches, 0.05 * scale), (settings.latency_wide_branches, scale)]
