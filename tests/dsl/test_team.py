"""`team(task, lead: agent, roles: [...])`: the Team operator in `.swarm`, checked and run."""

from __future__ import annotations

import json

import pytest

from swarmflow import run
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.testing import FunctionModel

from .helpers import codes, diags, graph_nodes, load, normalised
from .twins import pair, twin

FLOW = """flow pair(task: str) -> str
agent planner { tools [message_agent, submit] }
agent coder {}
edges planner -> coder
steps {
  result = team(task, lead: planner, roles: [planner, coder], listen: "passive")
  return result.answer
}
"""


def call(name: str, **arguments: str) -> ToolCall:
    """A tool call whose id is the same in both runs (the events are compared whole)."""
    return ToolCall(id=f"call_{name}", name=name, arguments=json.dumps(arguments))


def policy(request: ModelRequest) -> object:
    """The planner hands the task to the coder, then submits the coder's answer."""
    last = request.messages[-1]
    if request.agent == "coder":
        return f"coded {last.content.splitlines()[-1]}"
    if last.role != "tool":
        return call("message_agent", to="coder", text=request.messages[0].content or "")
    return call("submit", summary=last.content)


def test_a_team_flow_checks_clean():
    assert diags(FLOW) == []


async def test_a_swarm_team_records_the_same_events_as_its_python_twin():
    dsl = load(FLOW)
    a = await run(dsl, task="add a flag", model=FunctionModel(policy))
    b = await run(twin(pair, dsl), task="add a flag", model=FunctionModel(policy))
    assert a.status == b.status == "ok"
    assert a.output == b.output == "coded add a flag"
    assert normalised(a.events) == normalised(b.events)
    assert graph_nodes(a.events) == graph_nodes(b.events)
    assert [e.type for e in a.events if e.type in ("message_sent", "team_ended")] == [
        "message_sent",
        "team_ended",
    ]


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        ("team(task, lead: planer)", "unknown-agent", "unknown agent 'planer' (a team's lead"),
        ("team(task)", "misuse", "team(...) needs its lead"),
        ('team(task, lead: "planner")', "misuse", "a team's lead is a declared agent, named"),
        ("team(task, lead: planner, roles: [coder])", "misuse", "the lead 'planner' must be"),
        ("team(task, lead: planner, roles: [coder, coder])", "misuse", "the lead 'planner'"),
        ("team(task, lead: planner, roles: [planner, nobody])", "unknown-agent", "unknown agent"),
        ("team(task, lead: planner, roles: planner)", "misuse", "roles takes a list of agents"),
        ('team(task, lead: planner, listen: "loud")', "misuse", 'listen is "passive" or'),
        ("team(task, lead: planner, limit: 3)", "misuse", "team() has no option 'limit'"),
        ("team(lead: planner)", "misuse", "team(task, lead: agent) takes one task"),
        ("team(task, lead: planner) |x| { x }", "misuse", "team(...) takes no |x|"),
    ],
)
def test_check_verifies_the_lead_and_the_roles(call, code, message):
    source = FLOW.replace(
        'team(task, lead: planner, roles: [planner, coder], listen: "passive")', call
    )
    found = [d for d in diags(source) if d.is_error]
    assert found and found[0].code == code and found[0].message.startswith(message), found


def test_the_task_is_a_handoff_to_the_lead():
    source = FLOW.replace(
        "result = team(task,", "draft = coder(task)\n  result = team(draft,"
    )
    assert "handoff" in codes(source)
