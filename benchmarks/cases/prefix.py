"""Prompt-prefix reuse: the share of prompt tokens that repeat the previous request's prefix
in the same session, as recorded on `model_called` (what a provider's prompt cache can bill
at a fraction of the price).

Two shapes: a 20-step tool loop (one session, target 95% or more reused) and the flagship
flow run offline with its scripted demo policy (coders, reviewers and an arbiter). The figure
in the table is the share NOT reused, so that the harness's ceiling reads as a floor on reuse.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from benchmarks._harness import Row, Settings, Target
from benchmarks.cases._common import runs_folder
from swarmflow import Agent, Team, agent, flow, run
from swarmflow.channels import ScriptedHuman
from swarmflow.core.messages import ModelRequest, ModelResponse, ToolCall, Usage
from swarmflow.flows import TEAM, create_target, demo_model, solve
from swarmflow.flows.target_repo import DEMO_TASK
from swarmflow.report import digest
from swarmflow.testing import FunctionModel

LOOP_STEPS = 20
MISSED_TARGET = 5.0
"""At most 5% of a tool loop's prompt tokens may miss the previous request's prefix."""

CODER_TOOLS = next(a for a in TEAM.agents if a.name == "coder").tools
LOOP_TEAM = Team([Agent("looper", tools=list(CODER_TOOLS), workspace="local", max_steps=50)])


@flow(team=LOOP_TEAM)
async def tool_loop() -> str:
    """One session with the flagship coder's tools that calls a tool 19 times, then answers."""
    return (await agent("looper", "List the tree, one call at a time.")).text


def _loop_policy(request: ModelRequest) -> ModelResponse:
    done = sum(1 for m in request.messages if m.role == "assistant")
    if done < LOOP_STEPS - 1:
        arguments = json.dumps({"path": ".", "why": f"step {done}"})
        call = ToolCall(f"call{done}", "list_files", arguments)
        return ModelResponse(tool_calls=(call,), usage=Usage(100, 10))
    return ModelResponse(text="done", usage=Usage(100, 10))


def _missed(share: float | None) -> float:
    return 100.0 * (1.0 - (share or 0.0))


async def _loop_share(root: Path) -> float | None:
    result = await run(tool_loop, model=FunctionModel(_loop_policy), runs_root=root)
    result.raise_for_status()
    return digest(result.events).total().prefix_share


async def _flagship(root: Path) -> dict[str, float | None]:
    with tempfile.TemporaryDirectory(prefix="swarmflow-bench-target-") as where:
        target = await create_target(Path(where) / "target")
        result = await solve(
            target,
            DEMO_TASK,
            model=demo_model(),
            human=ScriptedHuman(lambda question, payload: "y"),
            runs_root=root,
        )
    result.raise_for_status()
    d = digest(result.events)
    shares: dict[str, float | None] = {a: s.prefix_share for a, s in d.by_agent().items()}
    shares["all"] = d.total().prefix_share
    return shares


def bench(settings: Settings) -> list[Row]:
    with runs_folder() as root:
        loop = anyio.run(_loop_share, root)
        flagship = anyio.run(_flagship, root)
    rows = [
        Row(
            f"prefix reuse, {LOOP_STEPS}-step tool loop",
            "prompt tokens not from the previous prefix",
            "%",
            _missed(loop),
            target=Target(MISSED_TARGET),
            note=f"reused {100 - _missed(loop):.1f}%",
        )
    ]
    per_agent: dict[str, Any] = {k: v for k, v in flagship.items() if k != "all"}
    note = ", ".join(f"{k} {100 - _missed(v):.0f}%" for k, v in per_agent.items())
    rows.append(
        Row(
            "prefix reuse, flagship (demo policy)",
            "prompt tokens not from the previous prefix",
            "%",
            _missed(flagship["all"]),
            note=f"reused {100 - _missed(flagship['all']):.1f}% ({note})",
        )
    )
    return rows
