"""Persistent role sessions: a role keeps its context; messages stay on declared edges."""

from __future__ import annotations

from swarmflow import Agent, TeamResult, team
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

ROLES = [
    Agent("lead", tools=["message_agent", "submit"]),
    Agent("coder", tools=["message_agent"]),
    Agent("reviewer"),
]
EDGES = [("lead", "coder"), ("coder", "lead"), ("coder", "reviewer"), ("lead", "reviewer")]


def _said(req: ModelRequest) -> str:
    return "\n".join(m.content or "" for m in req.messages)


def _lead_asks_twice(req: ModelRequest) -> object:
    tools = [m for m in req.messages if m.role == "tool"]
    if len(tools) == 0:
        return tool_call("message_agent", to="coder", text="first: write add")
    if len(tools) == 1:
        return tool_call("message_agent", to="coder", text="second: now write sub")
    return tool_call("submit", summary=f"done: {tools[-1].content}")


def _policy(req: ModelRequest) -> object:
    if req.agent == "lead":
        return _lead_asks_twice(req)
    turns = sum(m.role == "user" for m in req.messages)
    return f"coder turn {turns}"


async def test_a_role_keeps_its_context_across_messages() -> None:
    model = FunctionModel(_policy)
    result = await run_one(ROLES, lambda: team("build it", lead="lead"), model, edges=EDGES)
    out = result.output
    assert isinstance(out, TeamResult), result.error
    assert out.reason == "submitted" and out.answer == "done: coder turn 2"
    coder = [r for r in model.requests if r.agent == "coder"]
    assert len(coder) == 2
    assert "first: write add" in _said(coder[1]) and "second: now write sub" in _said(coder[1])
    assert "coder turn 1" in _said(coder[1])  # its own earlier answer is still there
    # One session per role for the whole run, each closed once.
    started = [e.agent for e in of_type(result, "session_started")]
    assert sorted(started) == ["coder", "lead", "reviewer"]
    assert out.roles["coder"].turns == 2 and out.roles["coder"].steps == 2
    assert out.roles["reviewer"].turns == 0 and out.messages == 2
    ended = of_type(result, "team_ended")[0]
    assert ended.reason == "submitted" and ended.agent == "lead"


async def test_an_undeclared_message_between_roles_is_refused_and_recorded() -> None:
    def policy(req: ModelRequest) -> object:
        if req.agent == "lead" and req.messages[-1].role != "tool":
            return tool_call("message_agent", to="reviewer", text="secret plan")
        return f"lead saw: {req.messages[-1].content}"

    model = FunctionModel(policy)
    edges = [("lead", "coder")]
    result = await run_one(ROLES, lambda: team("go", lead="lead"), model, edges=edges)
    out = result.output
    assert isinstance(out, TeamResult), result.error
    refusal = of_type(result, "message_refused")[0]
    assert (refusal.source, refusal.target) == ("lead", "reviewer")
    assert "refused" in out.answer and "no edge lead -> reviewer" in out.answer
    assert not [r for r in model.requests if r.agent == "reviewer"]  # nothing reached it
    assert out.roles["reviewer"].turns == 0 and out.messages == 0
    assert not of_type(result, "message_sent")


async def test_a_message_back_to_a_waiting_sender_is_refused_not_deadlocked() -> None:
    def policy(req: ModelRequest) -> object:
        last = req.messages[-1]
        if req.agent == "lead":
            if last.role != "tool":
                return tool_call("message_agent", to="coder", text="write add")
            return f"lead got: {last.content}"
        if last.role != "tool":
            return tool_call("message_agent", to="lead", text="which file?")
        return f"coder heard: {last.content}"

    model = FunctionModel(policy)
    result = await run_one(ROLES, lambda: team("go", lead="lead"), model, edges=EDGES)
    out = result.output
    assert isinstance(out, TeamResult), result.error
    assert "waiting for your answer" in out.answer
    refusal = of_type(result, "message_refused")[0]
    assert (refusal.source, refusal.target) == ("coder", "lead")
    assert out.reason == "idle"


async def test_message_agent_outside_a_team_still_opens_a_fresh_session() -> None:
    from swarmflow import agent

    def policy(req: ModelRequest) -> object:
        if req.agent == "lead" and req.messages[-1].role != "tool":
            return tool_call("message_agent", to="coder", text="hello")
        return f"{req.agent} turn {sum(m.role == 'user' for m in req.messages)}"

    async def body() -> object:
        await agent("lead", "once")
        return await agent("lead", "twice")

    model = FunctionModel(policy)
    result = await run_one(ROLES, body, model, edges=EDGES)
    # Each message opened its own coder session: two sessions, each on its first turn.
    coders = [e for e in of_type(result, "session_started") if e.agent == "coder"]
    assert len(coders) == 2
    asked = [r for r in model.requests if r.agent == "coder"]
    assert [sum(m.role == "user" for m in r.messages) for r in asked] == [1, 1]
