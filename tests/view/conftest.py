"""What the view's tests share: a finished run, and a run held open between model calls."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest

from swarmflow import Agent, Team, agent, flow, run, tool
from swarmflow.core.messages import ModelResponse, ToolCall
from swarmflow.testing import FunctionModel

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"
)


@tool
def measure(river: str) -> str:
    """Measure a river.

    Args:
        river: which river.
    """
    return f"{river} is 6,650 km long"


TEAM = Team([Agent("surveyor", tools=[measure])])


@flow(team=TEAM)
async def survey(river: str) -> str:
    return (await agent("surveyor", f"How long is the {river}?")).text


@dataclass
class HeldRun:
    """A run whose model waits on gates the test opens: `entered[i]` is set when call `i`
    began, and call `i` answers once `gates[i]` is set."""

    runs: Path
    entered: list[threading.Event] = field(
        default_factory=lambda: [threading.Event() for _ in range(2)]
    )
    gates: list[anyio.Event] = field(default_factory=list)
    finished: threading.Event = field(default_factory=threading.Event)

    def policy(self) -> Any:
        async def answer(request: Any) -> Any:
            step = sum(m.role == "assistant" for m in request.messages)
            self.entered[step].set()
            await self.gates[step].wait()
            if step == 0:
                call = ToolCall("call_m1", "measure", '{"river": "Nile"}')
                return ModelResponse(tool_calls=(call,))
            return "The Nile is 6,650 km long."

        return answer


@pytest.fixture
def held_run(tmp_path: Path) -> Iterator[tuple[HeldRun, Any]]:
    """A run of `survey` going in a thread, and the portal that opens its gates."""
    held = HeldRun(tmp_path / "runs")
    with anyio.from_thread.start_blocking_portal() as portal:
        held.gates = [portal.call(anyio.Event) for _ in range(2)]

        async def go() -> None:
            try:
                await run(survey, river="Nile", model=FunctionModel(held.policy()),
                          runs_root=held.runs)  # fmt: skip
            finally:
                held.finished.set()

        future = portal.start_task_soon(go)
        try:
            yield held, portal
        finally:
            for gate in held.gates:
                portal.call(gate.set)
            future.result(timeout=30)
