"""The handoff rule: a value from A reaches B only along A -> B; refusals send nothing."""

from __future__ import annotations

from pydantic import BaseModel

from swarmflow import Agent, Team, TopologyError, agent, agent_session, human, parallel
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

TEAM = [Agent("coder"), Agent("reviewer"), Agent("arbiter", tools=["message_agent"])]
EDGES = [("coder", "reviewer"), ("reviewer", "arbiter")]
CODE = "def add(a, b): return a - b  # the bug is right here in this line"


def _model() -> FunctionModel:
    return FunctionModel(lambda req: CODE if req.agent == "coder" else "reviewed fine")


async def _refused(body, model=None):  # type: ignore[no-untyped-def]
    model = model or _model()
    result = await run_one(TEAM, body, model, edges=EDGES)
    assert isinstance(result.error, TopologyError), result.error
    assert not [r for r in model.requests if r.agent == "arbiter"]  # nothing was sent
    return result


async def test_direct_handoff_without_edge_is_refused() -> None:
    async def body() -> object:
        code = await agent("coder", "write add")
        return await agent("arbiter", code)

    result = await _refused(body)
    err = result.error
    assert (err.source, err.target) == ("coder", "arbiter")
    assert "coder -> reviewer" in str(err) and "no edge coder -> arbiter" in str(err)
    refusal = of_type(result, "handoff_refused")[0]
    assert (refusal.source, refusal.target, refusal.via) == ("coder", "arbiter", "prompt")


async def test_allowed_edge_passes() -> None:
    async def body() -> str:
        code = await agent("coder", "write add")
        return (await agent("reviewer", code)).text

    result = await run_one(TEAM, body, _model(), edges=EDGES)
    assert result.output == "reviewed fine"


async def test_through_a_container_and_a_model() -> None:
    class Bundle(BaseModel):
        items: list[object]

    async def in_list() -> object:
        outs = await parallel(agent("coder", "a"), agent("coder", "b"))
        return await agent("arbiter", [o.value for o in outs])

    await _refused(in_list)

    async def in_model() -> object:
        code = await agent("coder", "a")
        return await agent("arbiter", Bundle(items=[{"k": code}]))

    await _refused(in_model)


async def test_through_an_f_string() -> None:
    async def body() -> object:
        code = await agent("coder", "write add")
        smuggled = f"Please judge this: {code.text[4:]} thanks"
        return await agent("arbiter", smuggled)

    await _refused(body)


async def test_through_a_template_variable_and_a_session() -> None:
    async def as_card_var() -> object:
        code = await agent("coder", "x")
        return await agent("arbiter", "judge", candidate=code)

    result = await _refused(as_card_var)
    assert of_type(result, "handoff_refused")[0].via == "template variable"

    async def via_session() -> object:
        code = await agent("coder", "x")
        async with agent_session("arbiter") as s:
            return await s.send(code)

    await _refused(via_session)


async def test_to_human_needs_an_edge() -> None:
    async def body() -> object:
        code = await agent("coder", "x")
        return await human("ok?", payload=code)

    result = await run_one(TEAM, body, _model(), edges=EDGES, human=["yes"])
    assert isinstance(result.error, TopologyError) and result.error.target == "human"


async def test_message_agent_along_an_undeclared_edge_is_refused() -> None:
    def policy(req: ModelRequest) -> object:
        if req.agent == "arbiter" and req.messages[-1].role != "tool":
            return tool_call("message_agent", to="coder", text="please write add")
        return "fine" if req.agent == "arbiter" else CODE

    model = FunctionModel(policy)
    result = await run_one(TEAM, lambda: agent("arbiter", "start"), model, edges=EDGES)
    assert result.status == "ok"
    refusal = of_type(result, "message_refused")[0]
    assert (refusal.source, refusal.target) == ("arbiter", "coder")
    assert not [r for r in model.requests if r.agent == "coder"]
    assert "refused" in (model.requests[1].messages[-1].content or "")


async def test_message_agent_along_a_declared_edge_delivers() -> None:
    def policy(req: ModelRequest) -> object:
        if req.agent == "arbiter" and req.messages[-1].role != "tool":
            return tool_call("message_agent", to="coder", text="please write add")
        return req.messages[-1].content if req.agent == "arbiter" else CODE

    result = await run_one(
        TEAM,
        lambda: agent("arbiter", "go"),
        FunctionModel(policy),
        edges=[*EDGES, ("arbiter", "coder")],
    )
    sent = of_type(result, "message_sent")[0]
    assert (sent.source, sent.target) == ("arbiter", "coder")
    assert CODE in result.output.text


async def test_message_to_an_unknown_agent_is_a_refused_spawn() -> None:
    def policy(req: ModelRequest) -> object:
        if req.messages[-1].role != "tool":
            return tool_call("message_agent", to="intern", text="do it")
        return "ok"

    result = await run_one(TEAM, lambda: agent("arbiter", "go"), FunctionModel(policy), edges=EDGES)
    spawn = of_type(result, "spawn_refused")[0]
    assert spawn.requested == "intern" and "roster" in spawn.reason


def test_team_check_reports_unknown_agents_and_unreachable() -> None:
    team = Team(
        [Agent("a"), Agent("b"), Agent("c")],
        edges=[("a", "b"), ("a", "ghost"), ("c", "c")],
        entry=("a",),
    )
    diags = team.check()
    assert any(d.code == "unknown-agent" and "ghost" in d.message for d in diags)
    assert any(d.code == "unreachable" and "'c'" in d.message for d in diags)
    g = team.graph()
    assert set(g.nodes) == {"a", "b", "c", "human", "ghost"} and g.has_edge("a", "b")


async def test_an_agent_may_relay_what_it_was_given() -> None:
    """The arbiter quotes the coder; its answer is the arbiter's product, so arbiter -> human
    suffices. The flow pasting the coder's text itself would need coder -> human."""
    team = [Agent("coder"), Agent("arbiter")]
    edges = [("coder", "arbiter"), ("arbiter", "human")]

    def policy(req: ModelRequest) -> str:
        return CODE if req.agent == "coder" else f"I pick this: {req.prompt}"

    async def relayed() -> object:
        verdict = await agent("arbiter", await agent("coder", "x"))
        return await human("ok?", payload=verdict)

    result = await run_one(team, relayed, FunctionModel(policy), edges=edges, human=["yes"])
    assert result.output == "yes"

    async def pasted() -> object:
        code = await agent("coder", "x")
        return await human(f"ok? {code.text}")

    result = await run_one(team, pasted, FunctionModel(policy), edges=edges, human=["yes"])
    assert isinstance(result.error, TopologyError) and result.error.source == "coder"


def _messaging_itself(req: ModelRequest) -> object:
    """The arbiter messages itself whenever it is not reading a tool's answer."""
    if req.agent == "arbiter" and req.messages[-1].role != "tool":
        return tool_call("message_agent", to="arbiter", text="think again")
    return f"answer after {len(req.messages)} messages"


async def test_an_agent_messaging_itself_needs_a_self_edge() -> None:
    model = FunctionModel(_messaging_itself)
    result = await run_one(TEAM, lambda: agent("arbiter", "start"), model, edges=EDGES)
    assert result.status == "ok"
    refusal = of_type(result, "message_refused")[0]
    assert (refusal.source, refusal.target) == ("arbiter", "arbiter")
    assert "self-edge" in refusal.reason
    assert not of_type(result, "message_sent")
    assert len(of_type(result, "session_started")) == 1  # no second session was opened
    assert "no edge arbiter -> arbiter" in (model.requests[1].messages[-1].content or "")


async def test_nested_messages_are_bounded_with_a_clear_refusal() -> None:
    from swarmflow.sessions.messaging import MAX_MESSAGE_DEPTH

    model = FunctionModel(_messaging_itself)
    edges = [*EDGES, ("arbiter", "arbiter")]
    result = await run_one(TEAM, lambda: agent("arbiter", "start"), model, edges=edges)
    assert result.status == "ok", result.error
    assert len(of_type(result, "message_sent")) == MAX_MESSAGE_DEPTH
    (refusal,) = of_type(result, "message_refused")
    assert f"nested more than {MAX_MESSAGE_DEPTH} deep" in refusal.reason
    assert refusal.reason.count("arbiter -> arbiter") == MAX_MESSAGE_DEPTH + 1
    assert len(of_type(result, "session_started")) == MAX_MESSAGE_DEPTH + 1


async def test_ping_pong_between_two_agents_is_bounded() -> None:
    team = [Agent("a", tools=["message_agent"]), Agent("b", tools=["message_agent"])]

    def policy(req: ModelRequest) -> object:
        if req.messages[-1].role != "tool":
            return tool_call("message_agent", to="b" if req.agent == "a" else "a", text="you")
        return "done"

    result = await run_one(
        team, lambda: agent("a", "go"), FunctionModel(policy), edges=[("a", "b"), ("b", "a")]
    )
    assert result.status == "ok"
    assert "nested more than" in of_type(result, "message_refused")[0].reason


async def test_message_agent_may_relay_what_the_sender_was_given() -> None:
    """The reviewer was given the coder's code along coder -> reviewer; passing it on to the
    arbiter with message_agent needs reviewer -> arbiter only."""
    team = [Agent("coder"), Agent("reviewer", tools=["message_agent"]), Agent("arbiter")]

    def policy(req: ModelRequest) -> object:
        if req.agent == "coder":
            return CODE
        if req.agent == "reviewer" and req.messages[-1].role != "tool":
            return tool_call("message_agent", to="arbiter", text=f"Is this right? {req.prompt}")
        return "fine"

    async def body() -> object:
        return await agent("reviewer", await agent("coder", "x"))

    model = FunctionModel(policy)
    result = await run_one(team, body, model, edges=EDGES)
    assert result.status == "ok"
    assert CODE in model.requests[-2].prompt and model.requests[-2].agent == "arbiter"
