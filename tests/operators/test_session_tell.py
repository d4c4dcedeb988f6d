"""`tell` adds a message to a kept session without a turn: no model call until the next ask."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from swarmflow import Agent, agent, agent_session, parallel
from swarmflow.core.errors import BudgetExhausted, ConfigError, TopologyError
from swarmflow.core.messages import ModelRequest
from swarmflow.report.timeline import timeline
from swarmflow.testing import FunctionModel, ScriptedModel
from tests.runtime.helpers import of_type, run_one

ANSWERS = ["answer 0: use a set", "answer 1: sort first", "answer 2: a heap"]


class Pick(BaseModel):
    choice: int


def contents(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role != "system"]


async def test_three_told_answers_and_one_ask_make_one_model_call() -> None:
    model = ScriptedModel(['{"choice": 2}'])

    async def body() -> Pick:
        async with agent_session("judge") as judge:
            for answer in ANSWERS:
                assert await judge.tell(answer) is None
            pick: Pick = await judge.ask("Pick the best answer.", output=Pick)
            return pick

    result = await run_one([Agent("judge")], body, model)
    assert result.status == "ok" and result.output == Pick(choice=2)
    model.assert_complete()
    (request,) = model.requests  # the three tells cost nothing
    sent = contents(request)
    assert sent[:3] == ANSWERS  # each a user message of its own, in the order told
    assert sent[3].startswith("Pick the best answer.")
    assert [m.role for m in request.messages] == ["user"] * 4
    assert [e.text for e in of_type(result, "session_told")] == ANSWERS
    assert len(of_type(result, "model_called")) == 1
    told = [e for e in timeline(result.events) if e.text == "told a message (no model call)"]
    assert len(told) == 3 and {e.kind for e in told} == {"message"}  # the report shows them


async def test_agent_outputs_told_along_an_edge_reach_the_judge() -> None:
    model = ScriptedModel({"writer": ANSWERS, "judge": ['{"choice": 0}']})

    async def body() -> Pick:
        drafts = await parallel(lambda i: agent("writer", f"draft {i}"), n=3, limit=1)
        async with agent_session("judge") as judge:
            for draft in drafts:
                await judge.tell(draft.value)
            pick: Pick = await judge.ask("Pick one.", output=Pick)
            return pick

    agents = [Agent("writer"), Agent("judge")]
    result = await run_one(agents, body, model, edges=[("writer", "judge")])
    assert result.status == "ok", result.error
    judged = [r for r in model.requests if r.agent == "judge"]
    assert len(judged) == 1
    told = contents(judged[0])[:3]
    assert all(answer in text for answer, text in zip(ANSWERS, told, strict=True))


async def test_a_tell_without_the_edge_is_refused_and_adds_nothing() -> None:
    secret = "the writer's draft 5be1d0c9, worded its own way"
    model = ScriptedModel({"writer": [secret], "judge": ["nothing to judge"]})
    refused: list[TopologyError] = []

    async def body() -> str:
        draft = await agent("writer", "draft")
        async with agent_session("judge") as judge:
            for smuggled in (draft, f"see: {str(draft).upper()}"):
                try:
                    await judge.tell(smuggled)
                except TopologyError as exc:
                    refused.append(exc)
            return str(await judge.send("Anything?"))

    result = await run_one([Agent("writer"), Agent("judge")], body, model)
    assert result.status == "ok", result.error
    assert [(e.source, e.target) for e in refused] == [("writer", "judge")] * 2
    events = of_type(result, "handoff_refused")
    assert [(e.source, e.target, e.via) for e in events] == [
        ("writer", "judge", "session message")
    ] * 2
    assert not of_type(result, "session_told")
    (asked,) = [r for r in model.requests if r.agent == "judge"]
    assert contents(asked) == ["Anything?"]  # nothing refused reached the history


@pytest.mark.parametrize("after", ["tell", "send", "ask"])
async def test_a_closed_session_refuses_more_messages(after: str) -> None:
    async def body() -> None:
        async with agent_session("judge") as judge:
            await judge.tell("one")
        await getattr(judge, after)("two")

    result = await run_one([Agent("judge")], body, ScriptedModel([]))
    assert result.status == "failed"
    assert isinstance(result.error, ConfigError) and "is closed" in str(result.error)
    assert len(of_type(result, "session_told")) == 1 and not of_type(result, "model_called")


async def test_tells_reserve_no_budget() -> None:
    """A run allowed one model call: the tells around it never ask the ledger for one."""
    model = ScriptedModel(['{"choice": 1}'])

    async def body() -> tuple[Pick, str]:
        async with agent_session("judge") as judge:
            for answer in ANSWERS:
                await judge.tell(answer)
            pick: Pick = await judge.ask("Pick.", output=Pick)
            await judge.tell("thanks; the budget is spent now")  # still fine: no call
            try:
                await judge.send("One more?")
            except BudgetExhausted:
                return pick, "refused"
            return pick, "not refused"

    result = await run_one([Agent("judge")], body, model, budget={"calls": 1})
    assert result.status == "ok", result.error
    assert result.output == (Pick(choice=1), "refused")
    assert len(model.requests) == 1 and len(of_type(result, "session_told")) == 4


async def test_the_next_turn_repeats_the_previous_prompt_as_its_prefix() -> None:
    model = ScriptedModel(["first answer", "second answer"])

    async def body() -> None:
        async with agent_session("judge") as judge:
            await judge.send("first question")
            await judge.tell("a note between turns")
            await judge.send("second question")

    result = await run_one([Agent("judge")], body, model)
    first, second = model.requests
    assert contents(second) == [
        "first question", "first answer", "a note between turns", "second question",
    ]  # fmt: skip
    one, two = of_type(result, "model_called")
    assert two.prefix_tokens == one.prompt_tokens > 0  # all of the first prompt is reused


async def test_a_tell_waits_for_the_turn_in_flight() -> None:
    """Told while a turn's model call is out, the message lands after that turn's answer,
    never between a question and its answer."""
    called, release = anyio.Event(), anyio.Event()

    async def policy(req: ModelRequest) -> str:
        if called.is_set():
            return "second answer"
        called.set()
        await release.wait()
        return "first answer"

    model = FunctionModel(policy)

    async def body() -> None:
        async with agent_session("judge") as judge:
            async with anyio.create_task_group() as tg:
                tg.start_soon(judge.send, "first question")
                await called.wait()
                tg.start_soon(judge.tell, "told meanwhile")
                await anyio.wait_all_tasks_blocked()  # the tell waits on the turn lock
                release.set()
            await judge.send("second question")

    result = await run_one([Agent("judge")], body, model)
    assert result.status == "ok", result.error
    assert contents(model.requests[-1]) == [
        "first question", "first answer", "told meanwhile", "second question",
    ]  # fmt: skip


async def test_a_cancelled_tell_adds_nothing() -> None:
    model = ScriptedModel(["fine"])

    async def body() -> None:
        async with agent_session("judge") as judge:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await judge.tell("never added")
            await judge.send("question")

    result = await run_one([Agent("judge")], body, model)
    assert result.status == "ok", result.error
    assert contents(model.requests[0]) == ["question"]
    assert not of_type(result, "session_told")
