"""What the swarmflow side and the raw-asyncio side of the cases share.

The swarmflow side always goes through the public API: a `@flow`, real agent sessions, a
`FunctionModel` with zero (or scripted) latency, and `run(..., events="jsonl")` with a
temporary runs folder. The baseline does the same work shape minus swarmflow: it awaits a
trivial fake model, an `async def` that returns a small object.

Every scripted reply carries its own `Usage`, so the fake model does not estimate tokens
from the whole history on each call (that would be the fake's cost, not swarmflow's, and it
grows with the history), and the model does not record requests (`record = False`), so that
the memory figures are swarmflow's alone.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchmarks._harness import Probe, Timings
from swarmflow import Agent, Flow, RunResult, Team, run
from swarmflow.core.messages import ModelRequest, Usage
from swarmflow.rails import Rail
from swarmflow.testing import FunctionModel, Step

WORKER = "worker"
TEAM = Team([Agent(WORKER)])
USAGE = Usage(input=12, output=2)
DONE = Step(text="done", usage=USAGE)


def reply(text: str = "done", latency: float = 0.0) -> Step:
    """A scripted answer with fixed usage."""
    return Step(text=text, latency=latency, usage=USAGE)


def function_model(policy: Callable[[ModelRequest], Any]) -> FunctionModel:
    """A `FunctionModel` that does not keep the requests it was sent."""
    model = FunctionModel(policy, name="bench")
    model.record = False
    return model


def zero_latency_model() -> FunctionModel:
    """Answers "done" at once, every time."""
    return function_model(lambda _request: DONE)


# -- the raw-asyncio side -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FakeReply:
    """What the baseline's fake model returns."""

    text: str
    tokens: int


async def fake_call(prompt: str) -> FakeReply:
    """The baseline's zero-latency model call."""
    return FakeReply("done", len(prompt) // 3 + 2)


async def fake_slow_call(prompt: str, latency: float) -> FakeReply:
    """The baseline's model call with latency."""
    await asyncio.sleep(latency)
    return FakeReply("ok", len(prompt) // 3 + 2)


# -- running flows --------------------------------------------------------------------------


@contextmanager
def runs_folder() -> Iterator[Path]:
    """A temporary runs root for one case, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="swarmflow-bench-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def run_flow(
    flow: Flow[..., Any], model: Any, root: Path, *, rails: Sequence[Rail] = (), **inputs: Any
) -> tuple[float, RunResult]:
    """One whole `run()` with the JSONL sink; seconds and result. Fails loudly if the run did."""
    started = time.perf_counter()
    result = await run(flow, model=model, events="jsonl", runs_root=root, rails=rails, **inputs)
    wall = time.perf_counter() - started
    result.raise_for_status()
    shutil.rmtree(result.run_dir, ignore_errors=True)
    return wall, result


class Gate:
    """Holds every caller until `n` have arrived, so that all branches are in flight at once."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.arrived = 0
        self.open = anyio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.n:
            self.open.set()
        else:
            await self.open.wait()


def gated_model(gate: Gate) -> FunctionModel:
    """A zero-latency model whose every call first waits at `gate`."""

    async def policy(_request: ModelRequest) -> Step:
        await gate.wait()
        return DONE

    return function_model(policy)


async def gated_call(gate: Gate, prompt: str) -> FakeReply:
    """The baseline's model call, held at `gate`."""
    await gate.wait()
    return await fake_call(prompt)


def first_word(request: ModelRequest) -> str:
    """The first word of the latest user message (the cases key latencies on it)."""
    words = request.prompt.split()
    return words[0] if words else ""


def flow_probe(
    root: Path, target: Flow[..., Any], model: Callable[[], Any], **inputs: Any
) -> Probe:
    """Times one whole `run()` of `target` with a fresh model; a dict output adds figures."""

    async def probe() -> Timings:
        wall, result = await run_flow(target, model(), root, **inputs)
        extra = result.output if isinstance(result.output, dict) else {}
        return {"wall": wall, **extra}

    return probe


def plain_probe(work: Callable[..., Awaitable[Any]], *args: Any) -> Probe:
    """Times one await of `work(*args)`; a dict result adds figures."""

    async def probe() -> Timings:
        started = time.perf_counter()
        out = await work(*args)
        extra = out if isinstance(out, dict) else {}
        return {"wall": time.perf_counter() - started, **extra}

    return probe
