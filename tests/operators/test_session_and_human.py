"""`agent_session` keeps a conversation; `human` asks a person through a channel."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from swarmflow import Agent, HumanTimeout, RunPaused, agent_session, human
from swarmflow.channels import DeferredHuman, ScriptedHuman
from swarmflow.core.messages import ModelRequest
from swarmflow.core.ports import HumanChannel
from swarmflow.testing import FunctionModel, ScriptedModel
from tests.runtime.helpers import of_type, run_one


class Verdict(BaseModel):
    choice: int
    confidence: float


async def test_session_keeps_history_across_turns() -> None:
    model = ScriptedModel(["noted 1", "noted 2", '{"choice": 1, "confidence": 0.9}'])

    async def body() -> Verdict:
        async with agent_session("arbiter") as arbiter:
            await arbiter.send("review of candidate 0: FAIL")
            await arbiter.send("review of candidate 1: PASS")
            return await arbiter.ask("Pick the best candidate.", output=Verdict)

    result = await run_one([Agent("arbiter")], body, model)
    assert result.output == Verdict(choice=1, confidence=0.9)
    contents = [m.content for m in model.requests[2].messages]
    assert "review of candidate 0: FAIL" in contents and "noted 2" in contents
    assert len(of_type(result, "session_started")) == 1
    assert len(of_type(result, "session_ended")) == 1


async def test_invalid_answer_is_asked_again_with_the_error() -> None:
    model = ScriptedModel(['{"choice": "first"}', 'Sure: {"choice": 0, "confidence": 0.5}'])

    async def body() -> Verdict:
        async with agent_session("arbiter") as arbiter:
            return await arbiter.ask("Pick.", output=Verdict)

    result = await run_one([Agent("arbiter")], body, model)
    assert result.output == Verdict(choice=0, confidence=0.5)
    retry = model.requests[1].messages[-1].content or ""
    assert "not valid" in retry and "choice" in retry


async def test_concurrent_turns_are_serialised() -> None:
    inside = 0
    overlapped = False

    async def policy(req: ModelRequest) -> str:
        nonlocal inside, overlapped
        inside += 1
        overlapped |= inside > 1
        await anyio.lowlevel.checkpoint()
        inside -= 1
        return "ack"

    async def body() -> None:
        async with agent_session("a") as s, anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(s.send, f"msg {i}")

    await run_one([Agent("a")], body, FunctionModel(policy))
    assert not overlapped


async def test_open_session_is_closed_with_the_run() -> None:
    async def body() -> None:
        s = agent_session("a")
        await s.send("hello")

    result = await run_one([Agent("a")], body, ScriptedModel(["hi"]))
    ended = of_type(result, "session_ended")
    assert len(ended) == 1 and ended[0].state == "done"
    assert result.events[-1].type == "run_finished"


async def test_human_scripted_records_request_and_answer() -> None:
    async def body() -> object:
        return await human("Approve?", payload={"choice": 1})

    result = await run_one(
        [], body, FunctionModel(lambda r: ""), human=ScriptedHuman(["yes"], who="alice")
    )
    assert result.output == "yes"
    asked, answered = of_type(result, "human_requested")[0], of_type(result, "human_answered")[0]
    assert asked.question == "Approve?" and asked.payload == {"choice": 1}
    assert answered.answer == "yes" and answered.answered_by == "alice"


class _Silent:
    name = "silent"

    async def ask(self, question: str, payload: object, *, token: str, timeout: float | None):  # type: ignore[no-untyped-def]
        await anyio.Event().wait()


async def test_timeout_policies() -> None:
    silent: HumanChannel = _Silent()

    async def with_default() -> object:
        return await human("Q?", channel=silent, timeout=0.01, on_timeout="default", default="no")

    result = await run_one([], with_default, FunctionModel(lambda r: ""))
    assert result.output == "no"
    assert of_type(result, "human_answered")[0].timed_out

    async def failing() -> object:
        return await human("Q?", channel=silent, timeout=0.01, on_timeout="fail")

    result = await run_one([], failing, FunctionModel(lambda r: ""))
    assert isinstance(result.error, HumanTimeout)


async def test_none_answer_is_an_error_not_silence() -> None:
    async def body() -> object:
        return await human("Q?")

    result = await run_one(
        [], body, FunctionModel(lambda r: ""), human=ScriptedHuman(lambda q, p: None)
    )
    assert result.status == "failed" and "no answer" in str(result.error)


async def test_deferred_pauses_and_resumes_by_token() -> None:
    async def body() -> object:
        return await human("Ship it?")

    first = await run_one([], body, FunctionModel(lambda r: ""), human=DeferredHuman())
    assert first.status == "paused" and isinstance(first.error, RunPaused)
    assert first.pause_token
    assert of_type(first, "run_finished")[0].status == "paused"
    resumed = await run_one(
        [],
        body,
        FunctionModel(lambda r: ""),
        human=DeferredHuman({first.pause_token: "ship"}),
        resume=first.run_dir,
    )
    assert resumed.output == "ship"
    assert resumed.run_id == first.run_id


async def test_human_output_conversion() -> None:
    async def body() -> Verdict:
        return await human("Override?", output=Verdict)

    result = await run_one(
        [],
        body,
        FunctionModel(lambda r: ""),
        human=ScriptedHuman(['{"choice": 2, "confidence": 1.0}']),
    )
    assert result.output == Verdict(choice=2, confidence=1.0)


def test_default_policy_needs_a_default() -> None:
    async def body() -> object:
        return await human("Q?", on_timeout="default")

    result = anyio.run(lambda: run_one([], body, FunctionModel(lambda r: "")))
    assert "default=" in str(result.error)


@pytest.mark.parametrize("answers", [["a"], {"Q?": "a"}])
async def test_scripted_answers_by_list_or_mapping(answers: object) -> None:
    async def body() -> object:
        return await human("Q?")

    result = await run_one([], body, FunctionModel(lambda r: ""), human=answers)
    assert result.output == "a"


async def test_a_deferred_question_inside_a_branch_pauses_the_whole_run() -> None:
    from swarmflow import parallel, pipeline

    async def branch(i: int) -> object:
        return await human(f"Approve branch {i}?")

    result = await run_one(
        [], lambda: parallel(branch, n=2), FunctionModel(lambda r: ""), human=DeferredHuman()
    )
    assert result.status == "paused" and isinstance(result.error, RunPaused)

    async def staged() -> list[object]:
        return await pipeline([1, 2], lambda x: human(f"Approve item {x}?")).collect()

    result = await run_one([], staged, FunctionModel(lambda r: ""), human=DeferredHuman())
    assert result.status == "paused" and isinstance(result.error, RunPaused)


def test_pauses_wrapped_by_a_task_group_still_pause_the_run() -> None:
    from swarmflow.runner.lifecycle import _pause_inside

    first = RunPaused("q1", token="a", question="q1")
    second = RunPaused("q2", token="b", question="q2")
    assert _pause_inside(ExceptionGroup("g", [first, ExceptionGroup("h", [second])])) is first
    assert _pause_inside(ExceptionGroup("g", [first, ValueError("x")])) is None
