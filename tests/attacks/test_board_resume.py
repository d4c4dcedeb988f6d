"""The board across a resume: a call that restarts does not post its message twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarmflow import Agent, Team, agent, agent_session, flow, run
from swarmflow.core.errors import ModelError
from swarmflow.core.messages import ModelRequest
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
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


def policy(lead_dies: bool, content: str = REQUEST) -> FunctionModel:
    def answer(request: ModelRequest) -> object:
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if request.agent == "lead":
            steps = [
                tool_call("create_thread", name="plan", participants=["coder"]),
                tool_call("send_message", thread="plan", content=content, mentions=["coder"]),
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
    lines = (run_dir / EVENTS_FILE).read_bytes().splitlines()
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


def test_the_board_is_recorded_once_in_the_event_stream(tmp_path: Path) -> None:
    import anyio

    first = anyio.run(lambda: run(plan_and_work, model=policy(lead_dies=False),
                                  runs_root=tmp_path))  # fmt: skip
    kinds = [json.loads(line)["kind"] for line in (first.run_dir / JOURNAL_FILE).read_bytes().splitlines()]  # fmt: skip
    assert not [k for k in kinds if k.startswith(("board", "human"))]
    assert len(logged(first.run_dir, "thread_created")) == 1


async def test_a_message_longer_than_its_preview_comes_back_whole(tmp_path: Path) -> None:
    long = "".join(f"line {i}: fix the parser's handling of case {i}\n" for i in range(200))
    assert len(long) > 5_000
    first = await run(plan_and_work, model=policy(lead_dies=True, content=long),
                      runs_root=tmp_path, raise_on_failure=False)  # fmt: skip
    (posted,) = logged(first.run_dir, "board_message_posted")
    assert len(posted["text"]) < len(long) and posted["text"] + posted["rest"] == long
    again = await run(plan_and_work, model=policy(lead_dies=False, content=long),
                      resume=first.run_dir, raise_on_failure=False)  # fmt: skip
    assert again.status == "ok", again.error
    # The restarted call's repeat matched the whole message put back from the events.
    assert len(logged(first.run_dir, "board_message_posted")) == 1


def turns_policy(lead_dies: bool) -> FunctionModel:
    """The lead opens the thread in one turn and posts to it in the next."""

    def answer(request: ModelRequest) -> object:
        last = request.messages[-1]
        if request.agent == "coder":
            if last.role != "tool":
                return tool_call("wait_for_mention", timeout=0)
            return "heard: " + (last.content or "")
        prompt = next(m.content for m in reversed(request.messages) if m.role == "user")
        if prompt == "open the thread":
            if last.role != "tool":
                return tool_call("create_thread", name="plan", participants=["coder"])
            return "opened"
        if last.role != "tool":
            return tool_call("send_message", thread="plan", content=REQUEST, mentions=["coder"])
        if lead_dies:  # the second turn dies after posting, before it returns
            return Step(error=ModelError("the model server went away"))
        return "posted"

    return FunctionModel(answer)


@flow(team=TEAM)
async def plan_in_turns() -> str:
    async with agent_session("lead") as lead:
        await lead.send("open the thread")
        await lead.send("post the request")
    return (await agent("coder", "wait for work")).text


async def test_a_restarted_turn_does_not_post_its_message_twice(tmp_path: Path) -> None:
    """The post is the first board change after the session's last finished turn."""
    first = await run(plan_in_turns, model=turns_policy(lead_dies=True), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and len(logged(first.run_dir, "board_message_posted")) == 1
    again = await run(plan_in_turns, model=turns_policy(lead_dies=False), resume=first.run_dir,
                      raise_on_failure=False)  # fmt: skip
    assert again.status == "ok", again.error
    assert len(logged(first.run_dir, "thread_created")) == 1
    assert len(logged(first.run_dir, "board_message_posted")) == 1
    assert len(logged(first.run_dir, "mention_delivered")) == 1
    assert REQUEST in again.output
