"""Told messages survive a crash: the resumed session holds each once, and nothing is paid
twice."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from swarmflow import Agent, RunResult, Team, agent_session, flow, run
from swarmflow.core.errors import ModelUnavailable
from swarmflow.core.messages import ModelRequest
from swarmflow.record.files import JOURNAL_FILE
from swarmflow.testing import FunctionModel
from tests.durable import tell_kill_target as target
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]


def contents(req: ModelRequest) -> list[str]:
    return [m.content or "" for m in req.messages if m.role != "system"]


def test_a_session_killed_between_tell_and_ask_resumes_with_each_told_message_once(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill_when_ready([sys.executable, target.__file__, str(tmp_path)], env)
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / JOURNAL_FILE).read_text().splitlines()]
    assert [r["kind"] for r in records if r["kind"] == "call_finished"] == ["call_finished"]

    asked: list[ModelRequest] = []

    def counting(req: ModelRequest) -> str:
        asked.append(req)
        return target.answer(req)

    async def resume() -> RunResult:
        return await run(target.judged, model=FunctionModel(counting), resume=run_dir)

    resumed = anyio.run(resume)
    assert resumed.status == "ok" and resumed.output == target.Pick(choice=2)
    (request,) = asked  # the recorded turn was replayed; only the interrupted ask is paid
    sent = contents(request)
    assert sent[:5] == [target.BRIEF, "answer 0: bubble sort", "heard", *target.ANSWERS]
    assert len(sent) == 6 and sent[5].startswith(target.QUESTION)
    assert [e.type for e in resumed.events].count("call_replayed") == 1


@flow(team=Team([Agent("judge")]))
async def told_then_asked(note: str) -> str:
    async with agent_session("judge") as judge:
        await judge.tell(note)
        first = await judge.send("first question")
        await judge.send("second question")
        return str(first)


async def test_a_resumed_flow_that_tells_something_else_diverges_at_the_next_turn(
    tmp_path: Path,
) -> None:
    def failing(req: ModelRequest) -> str:
        if "second question" in (req.messages[-1].content or ""):
            raise ModelUnavailable("the endpoint went away")
        return "first answer"

    failed = await run(
        told_then_asked, note="note A", model=FunctionModel(failing), runs_root=tmp_path,
        raise_on_failure=False,
    )  # fmt: skip
    assert failed.status == "failed"
    asked: list[list[str]] = []

    def working(req: ModelRequest) -> str:
        asked.append(contents(req))
        return "answer"

    same = await run(
        told_then_asked, note="note A", model=FunctionModel(working), resume=failed.run_dir
    )
    assert same.status == "ok" and [a[-1] for a in asked] == ["second question"]
    assert not [e for e in same.events if e.type == "resume_diverged"]

    asked.clear()
    failed_again = await run(
        told_then_asked, note="note A", model=FunctionModel(failing), runs_root=tmp_path / "b",
        raise_on_failure=False,
    )  # fmt: skip
    edited = await run(
        told_then_asked, note="note B", model=FunctionModel(working), resume=failed_again.run_dir
    )
    assert edited.status == "ok"
    (diverged,) = [e for e in edited.events if e.type == "resume_diverged"]
    assert diverged.index == 0  # the first turn: what it was told changed
    assert asked == [["note B", "first question"], ["note B", "first question", "answer",
                                                   "second question"]]  # fmt: skip
