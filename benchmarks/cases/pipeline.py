"""Pipeline: coders with latencies spread from 10 to 500 ms feed a review stage.

`parallel.stream` yields each coder's outcome as it completes and `pipeline` hands it to the
review stage (10 ms) at once, with no barrier, so the first reviewed item should arrive after
about 10 + 10 ms rather than after the slowest coder. Baseline: each item's two sleeps chained
in plain asyncio (the ideal dataflow schedule).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from benchmarks._harness import Paired, Row, Settings, alternate
from benchmarks.cases._common import (
    fake_slow_call,
    flow_probe,
    function_model,
    plain_probe,
    reply,
    runs_folder,
)
from swarmflow import Agent, Ok, Team, agent, flow, parallel, pipeline
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step

REVIEW_LATENCY = 0.010
CODER_RANGE = (0.010, 0.500)

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


def _pipeline_rows(settings: Settings, root: Path) -> list[Row]:
    n, scale = settings.coders, settings.time_scale
    paired: Paired = alternate(
        flow_probe(root, review_pipeline, lambda: pipeline_model(n, scale), coders=n),
        plain_probe(pipeline_baseline, n, scale),
        settings,
    )
    ours, theirs = paired.swarmflow, paired.baseline
    case = f"pipeline {n} coders"
    return [
        Row(
            case,
            "time to first reviewed item",
            "s",
            ours["first"],
            theirs["first"],
            note=f"ideal {(CODER_RANGE[0] + REVIEW_LATENCY) * scale:g} s",
        ),
        Row(case, "time to last reviewed item", "s", ours["last"], theirs["last"]),
    ]


def bench(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        return _pipeline_rows(settings, root)
