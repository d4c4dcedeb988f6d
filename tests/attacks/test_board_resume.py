"""The board across a resume: a call that restarts does not post its message twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.errors import ModelError
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step, tool_call

BOARD = ("create_thread", "send_message", "wait_for_mention")
TEAM = Team(
    [Agent("lead", tools=BOARD), Agent("coder", tools=BOARD)],
    edges=[("lead", "coder"), ("coder", "lead")],
)
REQUEST = "please fix the parser"


@flow(team=TEAM)
async def plan_and_work() -> str:
    await agent("lead", "open the plan")
    return (await agent("coder", "wait for work")).text


def policy(lead_dies: bool) -> FunctionModel:
    def answer(request: ModelRequest) -> object:
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if request.agent == "lead":
            steps = [
                tool_call("create_thread", name="plan", participants=["coder"]),
                tool_call("send_message", thread="plan", content=REQUEST, mentions=["coder"]),
            ]
            if len(results) < 2:
                return steps[len(results)]
            if lead_dies:  # the lead's call dies after posting, before it returns
                return Step(error=ModelError("the model server went away"))
            return "asked"
        if not results:
            return tool_call("wait_for_mention", timeout=0)
        return "heard: " + results[-1]

    return FunctionModel(answer)


def logged(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_bytes().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


async def test_a_restarted_call_does_not_post_its_message_twice(tmp_path: Path) -> None:
    first = await run(plan_and_work, model=policy(lead_dies=True), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    assert len(logged(first.run_dir, "board_message_posted")) == 1
    again = await run(plan_and_work, model=policy(lead_dies=False), resume=first.run_dir,
                      raise_on_failure=False)  # fmt: skip
    assert again.status == "ok", again.error
    # The lead's restarted call posted the same message again: the board has it once, and
    # the coder is mentioned once, so its work is not asked for (and paid for) twice.
    assert len(logged(first.run_dir, "board_message_posted")) == 1
    assert again.output.count(REQUEST) == 2  # the mention, and the message in the snapshot
    assert len(logged(first.run_dir, "mention_delivered")) == 1
