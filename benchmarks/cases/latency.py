"""Latency-shaped cases: the skew probe, the latency-bound fan-out, and the review pipeline.

Model latency is simulated with `Step(latency=...)`; times are wall-clock (`perf_counter`)
around the whole `run()`, and the baseline does the same sleeps in plain asyncio.

- skew: branch A makes calls of 100 ms then 10 ms, branch B of 10 ms then 100 ms, then a
  join. Dataflow scheduling needs about 0.11 s; lock-step supersteps need 0.20 s.
- latency-bound: 64 branches of one 50 ms call each; wall time / 0.05 s.
- pipeline: coders with latencies spread from 10 to 500 ms feed a review stage (10 ms);
  the time to the first reviewed item (no barrier: about 10 + 10 ms).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import Paired, Probe, Row, Settings, Target, Timings, alternate
from benchmarks.cases._common import (
    TEAM,
    WORKER,
    fake_slow_call,
    function_model,
    reply,
    run_flow,
    runs_folder,
)
from swarmflow import Agent, Ok, Team, agent, compact, flow, parallel, pipeline
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step

SKEW = {"A1": 0.100, "A2": 0.010, "B1": 0.010, "B2": 0.100}
SKEW_TARGET = 0.115
CALL_LATENCY = 0.05
LATENCY_RATIO_TARGET = 1.1
REVIEW_LATENCY = 0.010
CODER_RANGE = (0.010, 0.500)


def _first_word(request: ModelRequest) -> str:
    words = request.prompt.split()
    return words[0] if words else ""


# -- skew probe -----------------------------------------------------------------------------


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
    return function_model(lambda r: reply("ok", SKEW.get(_first_word(r), 0.0) * scale))


async def skew_baseline(scale: float) -> str:
    async def lane(name: str) -> str:
        first = await fake_slow_call(f"{name}1", SKEW[f"{name}1"] * scale)
        second = await fake_slow_call(f"{name}2 {first.text}", SKEW[f"{name}2"] * scale)
        return second.text

    outcomes = await asyncio.gather(lane("A"), lane("B"))  # noqa: TID251
    return (await fake_slow_call("join " + " ".join(outcomes), 0.0)).text


# -- latency-bound fan-out ------------------------------------------------------------------


@flow(team=TEAM)
async def latency_bound(n: int) -> int:
    """n branches of one slow call each; returns how many succeeded."""
    outcomes = await parallel(lambda i: agent(WORKER, f"task {i}"), n=n)
    return sum(isinstance(o, Ok) for o in outcomes)


# -- review pipeline ------------------------------------------------------------------------

PIPE_TEAM = Team([Agent("coder"), Agent("reviewer")], edges=[("coder", "reviewer")])


def coder_latencies(n: int, scale: float) -> list[float]:
    """n latencies spread evenly from 10 to 500 ms, scaled."""
    low, high = CODER_RANGE
    step = (high - low) / max(1, n - 1)
    return [(low + i * step) * scale for i in range(n)]


@flow(team=PIPE_TEAM)
async def review_pipeline(coders: int) -> dict[str, float]:
    """Coders stream into a review stage; returns seconds to the first and the last review."""
    started = time.perf_counter()
    first: float | None = None
    coded = parallel.stream(lambda i: agent("coder", f"task {i}"), n=coders)
    async for outcome in pipeline(coded, lambda c: agent("reviewer", c), limit=coders):
        if not isinstance(outcome, Ok):
            raise RuntimeError(f"review failed: {outcome!r}")
        if first is None:
            first = time.perf_counter() - started
    return {"first": first or 0.0, "last": time.perf_counter() - started}


def pipeline_model(coders: int, scale: float) -> FunctionModel:
    latencies = coder_latencies(coders, scale)

    def policy(request: ModelRequest) -> Step:
        if request.agent == "coder":
            return reply("patch", latencies[int(request.prompt.split()[-1])])
        return reply("approved", REVIEW_LATENCY * scale)

    return function_model(policy)


async def pipeline_baseline(coders: int, scale: float) -> dict[str, float]:
    started = time.perf_counter()
    firsts: list[float] = []

    async def item(latency: float) -> None:
        coded = await fake_slow_call("task", latency)
        await fake_slow_call(coded.text, REVIEW_LATENCY * scale)
        firsts.append(time.perf_counter() - started)

    await asyncio.gather(*(item(x) for x in coder_latencies(coders, scale)))  # noqa: TID251
    return {"first": min(firsts), "last": time.perf_counter() - started}


# -- probes and rows ------------------------------------------------------------------------


def _flow_probe(root: Path, make: Any, model: Any, **inputs: Any) -> Probe:
    async def probe() -> Timings:
        wall, result = await run_flow(make, model(), root, **inputs)
        extra = result.output if isinstance(result.output, dict) else {}
        return {"wall": wall, **extra}

    return probe


def _plain_probe(work: Any, *args: Any) -> Probe:
    async def probe() -> Timings:
        started = time.perf_counter()
        out = await work(*args)
        extra = out if isinstance(out, dict) else {}
        return {"wall": time.perf_counter() - started, **extra}

    return probe


async def _sleepers(n: int, latency: float) -> None:
    await asyncio.gather(*(fake_slow_call(f"task {i}", latency) for i in range(n)))  # noqa: TID251


def _skew_rows(settings: Settings, root: Path) -> list[Row]:
    scale = settings.time_scale
    paired = alternate(_flow_probe(root, skew_probe, lambda: skew_model(scale)),
                       _plain_probe(skew_baseline, scale), settings)
    return [Row("skew probe", "wall time", "s", paired.swarmflow["wall"], paired.baseline["wall"],
                Target(SKEW_TARGET * scale), note="lock-step engines: 0.20 s")]


def _latency_rows(settings: Settings, root: Path) -> list[Row]:
    n, latency = settings.latency_branches, CALL_LATENCY * settings.time_scale
    model = lambda: function_model(lambda _r: reply("ok", latency))  # noqa: E731
    paired = alternate(_flow_probe(root, latency_bound, model, n=n),
                       _plain_probe(_sleepers, n, latency), settings)
    ours, theirs = paired.swarmflow["wall"] / latency, paired.baseline["wall"] / latency
    return [Row(f"latency-bound {n} x {latency * 1000:g} ms", "wall / call latency", "x", ours,
                theirs, Target(LATENCY_RATIO_TARGET), ratio=ours)]


def _pipeline_rows(settings: Settings, root: Path) -> list[Row]:
    n, scale = settings.coders, settings.time_scale
    paired: Paired = alternate(
        _flow_probe(root, review_pipeline, lambda: pipeline_model(n, scale), coders=n),
        _plain_probe(pipeline_baseline, n, scale), settings)
    ours, theirs = paired.swarmflow, paired.baseline
    case = f"pipeline {n} coders"
    return [
        Row(case, "time to first reviewed item", "s", ours["first"], theirs["first"],
            note=f"ideal {(CODER_RANGE[0] + REVIEW_LATENCY) * scale:g} s"),
        Row(case, "time to last reviewed item", "s", ours["last"], theirs["last"]),
    ]


def bench_skew(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return _skew_rows(settings, root)


def bench_latency(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return _latency_rows(settings, root)


def bench_pipeline(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return _pipeline_rows(settings, root)
