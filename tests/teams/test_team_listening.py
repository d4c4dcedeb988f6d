"""Listening modes on the same scripted team: passive spends no step listening, blocking one
step per wait, and the same mentions are delivered."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import anyio
import pytest

from swarmflow import Agent, ConfigError, Team, TeamResult, team
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

BOARD = ("create_thread", "send_message", "wait_for_mention")
WORKERS = ("w1", "w2", "w3")
ROLES = [Agent("assembler", tools=[*BOARD, "submit"]), *(Agent(w, tools=BOARD) for w in WORKERS)]
EDGES = [(a, b) for w in WORKERS for a, b in (("assembler", w), (w, "assembler"))]


def _seen(req: ModelRequest) -> set[str]:
    text = "\n".join(m.content or "" for m in req.messages)
    return set(re.findall(r"part done by (w\d)", text))


def _assembler(req: ModelRequest, mode: str) -> object:
    tools = [m for m in req.messages if m.role == "tool"]
    if not tools:
        return tool_call("create_thread", name="plan", participants=list(WORKERS))
    if len(tools) == 1:
        return tool_call("send_message", thread="plan", content="report your part",
                         mentions=list(WORKERS))  # fmt: skip
    seen = _seen(req)
    if seen == set(WORKERS):
        return tool_call("submit", summary=f"assembled {', '.join(sorted(seen))}")
    if mode == "blocking":
        return tool_call("wait_for_mention", timeout=30)
    return "waiting for the team"  # passive: idle until a mention wakes it


def _worker(req: ModelRequest) -> object:
    last = req.messages[-1]
    text = last.content or ""
    if last.role == "user" and "unread mention" in text:
        return tool_call("wait_for_mention", timeout=30)  # blocking: listening is a step
    if "report your part" in text and last.role in ("user", "tool"):
        return tool_call("send_message", thread="plan", content=f"part done by {req.agent}",
                         mentions=["assembler"])  # fmt: skip
    return "reported"


def _policy(mode: str) -> Any:
    def policy(req: ModelRequest) -> object:
        return _assembler(req, mode) if req.agent == "assembler" else _worker(req)

    return policy


async def _run(mode: str) -> tuple[TeamResult, Any]:
    result = await run_one(ROLES, lambda: team("assemble", lead="assembler", listen=mode),
                           FunctionModel(_policy(mode)), edges=EDGES)  # fmt: skip
    assert isinstance(result.output, TeamResult), result.error
    return result.output, result


def _listening_steps(result: Any) -> int:
    return sum("wait_for_mention" in e.tool_calls for e in of_type(result, "model_called"))


def _delivered(result: Any) -> Counter[tuple[str, str, str]]:
    return Counter((e.thread, e.sender, e.recipient) for e in of_type(result, "mention_delivered"))


async def test_passive_and_blocking_deliver_the_same_mentions() -> None:
    passive, p_result = await _run("passive")
    blocking, b_result = await _run("blocking")
    assert passive.reason == blocking.reason == "submitted"
    assert passive.answer == blocking.answer == "assembled w1, w2, w3"
    assert _delivered(p_result) == _delivered(b_result)
    assert sum(_delivered(p_result).values()) == 6  # three to the workers, three back


async def test_passive_spends_no_step_and_no_model_call_listening() -> None:
    out, result = await _run("passive")
    assert _listening_steps(result) == 0
    assert not [e for e in of_type(result, "tool_executed") if e.tool == "wait_for_mention"]
    assert {e.mode for e in of_type(result, "mention_delivered")} == {"passive"}
    # Each worker: one wake-up carrying the mention, one post, one closing answer.
    assert all(out.roles[w].steps == 2 for w in WORKERS)


async def test_blocking_spends_exactly_one_step_per_wait() -> None:
    out, result = await _run("blocking")
    waits = [e for e in of_type(result, "tool_executed") if e.tool == "wait_for_mention"]
    listening = [e for e in of_type(result, "model_called") if "wait_for_mention" in e.tool_calls]
    assert waits and len(listening) == len(waits)
    assert all(e.tool_calls == ["wait_for_mention"] for e in listening)
    assert {e.mode for e in of_type(result, "mention_delivered")} == {"blocking"}
    assert all(out.roles[w].steps == 3 for w in WORKERS)  # one more each: the wait


async def test_a_mention_surfaces_at_the_next_step_boundary_of_a_busy_role() -> None:
    """The lead is mid-turn (waiting on a message_agent answer) when the worker mentions it:
    the mention is in the lead's very next request, with no model call spent on it."""
    roles = [Agent("lead", tools=["message_agent", *BOARD]), Agent("w1", tools=BOARD)]
    edges = [("lead", "w1"), ("w1", "lead")]

    def policy(req: ModelRequest) -> object:
        tools = [m for m in req.messages if m.role == "tool"]
        if req.agent == "lead":
            if not tools:
                return tool_call("create_thread", name="t", participants=["w1"])
            if len(tools) == 1:
                return tool_call("message_agent", to="w1", text="post on t, then answer")
            return "lead saw: " + " | ".join(m.content or "" for m in req.messages[-2:])
        if not tools:
            return tool_call("send_message", thread="t", content="heads up", mentions=["lead"])
        return "w1 answered"

    model = FunctionModel(policy)
    result = await run_one(roles, lambda: team("go", lead="lead"), model, edges=edges)
    out = result.output
    assert isinstance(out, TeamResult), result.error
    third = [r for r in model.requests if r.agent == "lead"][2]
    assert third.messages[-2].role == "tool" and third.messages[-2].content == "w1 answered"
    assert third.messages[-1].role == "user" and "heads up" in (third.messages[-1].content or "")
    assert out.roles["lead"].steps == 3 and out.reason == "idle"
    assert [e.mode for e in of_type(result, "mention_delivered")] == ["passive"]


async def test_a_role_parked_in_wait_for_mention_is_mentioned_not_messaged() -> None:
    roles = [Agent("lead", tools=BOARD, listen="blocking"),
             Agent("w1", tools=["message_agent", *BOARD])]  # fmt: skip
    edges = [("lead", "w1"), ("w1", "lead")]

    async def policy(req: ModelRequest) -> object:
        tools = [m for m in req.messages if m.role == "tool"]
        if req.agent == "lead":
            steps = [
                tool_call("create_thread", name="t", participants=["w1"]),
                tool_call("send_message", thread="t", content="go", mentions=["w1"]),
                tool_call("wait_for_mention", timeout=30),
            ]
            return steps[len(tools)] if len(tools) < 3 else f"lead: {tools[-1].content}"
        if not tools:
            await anyio.wait_all_tasks_blocked()  # the lead is parked in its wait by now
            return tool_call("message_agent", to="lead", text="are you there?")
        if len(tools) == 1:
            return tool_call("send_message", thread="t", content=f"w1: {tools[0].content}",
                             mentions=["lead"])  # fmt: skip
        return "w1 done"

    result = await run_one(roles, lambda: team("go", lead="lead"), FunctionModel(policy),
                           edges=edges)  # fmt: skip
    out = result.output
    assert isinstance(out, TeamResult), result.error
    refusal = of_type(result, "message_refused")[0]
    assert (refusal.source, refusal.target) == ("w1", "lead")
    assert "listening on the board" in refusal.reason and "@mention it" in refusal.reason
    assert "listening on the board" in out.answer  # the refusal reached the lead by mention
    assert out.reason == "idle"


async def test_the_team_is_idle_when_every_busy_role_is_parked() -> None:
    roles = [Agent("lead", tools=["message_agent", *BOARD]), Agent("w1", tools=BOARD)]
    edges = [("lead", "w1"), ("w1", "lead")]

    def policy(req: ModelRequest) -> object:
        tools = [m for m in req.messages if m.role == "tool"]
        if req.agent == "w1":
            return "w1 here"
        if not tools:
            return tool_call("wait_for_mention", timeout=5)
        return f"lead: {tools[-1].content}"

    result = await run_one(roles, lambda: team("go", lead="lead", listen="blocking"),
                           FunctionModel(policy), edges=edges)  # fmt: skip
    out = result.output
    assert isinstance(out, TeamResult), result.error
    # Everyone idle or parked with nothing pending: the team ends without waiting 5 s out.
    assert out.reason == "idle" and out.roles["lead"].reason == "cancelled"


def test_a_role_that_must_block_needs_wait_for_mention() -> None:
    roles = [Agent("lead", tools=["submit"], listen="blocking")]

    async def main() -> Any:
        return await run_one(roles, lambda: team("go", lead="lead"), FunctionModel(lambda r: "x"))

    result = anyio.run(main)
    assert isinstance(result.error, ConfigError) and "no wait_for_mention" in str(result.error)


@pytest.mark.parametrize("mode", ["passive", "blocking"])
async def test_a_role_without_wait_for_mention_hears_passively(mode: str) -> None:
    roles = [Agent("lead", tools=["submit", *BOARD]), Agent("w1")]
    result = await run_one(roles, lambda: team("go", lead="lead", listen=mode),
                           FunctionModel(lambda r: "x"), edges=[("lead", "w1")])  # fmt: skip
    out = result.output
    assert isinstance(out, TeamResult), result.error
    assert out.roles["w1"].listen == "passive" and out.roles["lead"].listen == mode
    assert Team  # the declaration type is public
