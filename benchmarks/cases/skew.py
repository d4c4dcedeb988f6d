"""Skew probe: do dependent calls in two branches wait for each other?

Branch A makes calls of 100 ms then 10 ms, branch B of 10 ms then 100 ms, then a join.
Dataflow scheduling (each branch moves on as soon as its own call returns) needs about
0.11 s; engines that run in lock-step supersteps need 0.20 s. Latency is simulated with
`Step(latency=...)`; the wall time covers the whole `run()`. Baseline: the same sleeps in
plain asyncio.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks._harness import Row, Settings, Target, alternate
from benchmarks.cases._common import (
    TEAM,
    WORKER,
    fake_slow_call,
    first_word,
    flow_probe,
    function_model,
    plain_probe,
    reply,
    runs_folder,
)
from swarmflow import agent, compact, flow, parallel
from swarmflow.testing import FunctionModel

SKEW = {"A1": 0.100, "A2": 0.010, "B1": 0.010, "B2": 0.100}
SKEW_TARGET = 0.115


@flow(team=TEAM)
async def skew_probe() -> str:
    """Two lanes of two dependent calls each, then a join."""

    async def lane(name: str) -> str:
        first = await agent(WORKER, f"{name}1")
        second = await agent(WORKER, f"{name}2 after {first.text}")
        return str(second.text)

    outcomes = await parallel(lane("A"), lane("B"))
    joined = await agent(WORKER, "join " + " ".join(compact(outcomes)))
    return str(joined.text)


def skew_model(scale: float) -> FunctionModel:
    return function_model(lambda r: reply("ok", SKEW.get(first_word(r), 0.0) * scale))


async def skew_baseline(scale: float) -> str:
    async def lane(name: str) -> str:
        first = await fake_slow_call(f"{name}1", SKEW[f"{name}1"] * scale)
        second = await fake_slow_call(f"{name}2 {first.text}", SKEW[f"{name}2"] * scale)
        return second.text

    outcomes = await asyncio.gather(lane("A"), lane("B"))  # noqa: TID251
    return (await fake_slow_call("join " + " ".join(outcomes), 0.0)).text


def skew_walls(settings: Settings, root: Path) -> tuple[float, float]:
    """Median wall seconds of the skew probe: swarmflow, baseline."""
    scale = settings.time_scale
    paired = alternate(
        flow_probe(root, skew_probe, lambda: skew_model(scale)),
        plain_probe(skew_baseline, scale),
        settings,
    )
    return paired.swarmflow["wall"], paired.baseline["wall"]


def _skew_rows(settings: Settings, root: Path) -> list[Row]:
    ours, theirs = skew_walls(settings, root)
    return [
        Row(
            "skew probe",
            "wall time",
            "s",
            ours,
            theirs,
            Target(SKEW_TARGET * settings.time_scale),
            note="lock-step engines: 0.20 s",
        )
    ]


def bench(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return _skew_rows(settings, root)
