"""`tell` and `tell each`: messages added to a session without a turn, in `.swarm`."""

from __future__ import annotations

import pytest

from swarmflow import run
from swarmflow.core.errors import TopologyError
from swarmflow.dsl.compile.plan import plan_module
from swarmflow.dsl.compile.to_flow import build_flow
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.parser import parse
from swarmflow.testing import ScriptedModel

from .helpers import errors, flow_text, load, of_type, rendered

AGENTS = "agent writer {}\nagent judge {}"
JUDGED = """  drafts = compact(parallel(3) |i| { writer("Draft {i} for {task}") })
  session judge {
    tell "The task: {task}"
    tell each drafts
    pick = ask "Pick the best draft."
  }
  return pick.text"""
ANSWERS = ["draft zero: a set", "draft one: a sort", "draft two: a heap"]


def judged(edges: str = "edges writer -> judge") -> str:
    return flow_text(JUDGED, agents=AGENTS, edges=edges)


def sends(module: ast.Module) -> list[ast.Send]:
    found = [n for n in ast.walk(module.steps[0]) if isinstance(n, ast.Send)]
    return sorted(found, key=lambda n: (n.line, n.column))


def test_tell_and_tell_each_parse_as_sends_without_a_turn() -> None:
    told = sends(parse(judged()))
    assert [(s.each, s.turn) for s in told] == [(False, False), (True, False)]
    source = flow_text("  session judge {\n    send task\n    send each [task]\n  }\n  return task")
    assert [(s.each, s.turn) for s in sends(parse(source))] == [(False, True), (True, True)]


def test_tell_is_a_reserved_word() -> None:
    source = "flow f(tell: str) -> str\nsteps {\n  return tell\n}\n"
    assert "t.swarm:1:8: error: 'tell' is a reserved word" in rendered(source)


def test_a_told_flow_checks_clean() -> None:
    assert errors(judged()) == []


def test_check_reports_a_tell_without_its_edge_where_it_is_told() -> None:
    text = rendered(judged(edges="edges judge -> human"))
    assert (
        "writer's output reaches judge here (tell in the judge session), but no edge "
        "writer -> judge is declared"
    ) in text
    assert text.startswith("t.swarm:10:15: error:")  # at `drafts`, the value told


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        ("  tell task\n  return task", "'tell' talks to a session"),
        ("  session a {\n    tell each 3\n  }\n  return task", "tell each"),
    ],
)
def test_tell_misuse(steps: str, words: str) -> None:
    found = [d.message for d in errors(flow_text(steps))]
    assert any(words in m for m in found), found


def test_a_tell_spends_nothing_in_the_budget_check() -> None:
    """Per branch, three tells and an ask are one call of the judge's; three sends and an
    ask would not fit the budget."""
    steps = "  r = parallel(2) |i| {\n    session judge {\n      VERB each [task, task, task]\n"
    steps += "      x = ask task\n    }\n    return x.text\n  }\n  return r"
    given = {"agents": "agent judge { allowance 100k }", "head": "budget tokens 250k"}
    assert errors(flow_text(steps.replace("VERB", "tell"), **given)) == []
    (sent,) = errors(flow_text(steps.replace("VERB", "send"), **given))
    assert "parallel(2) may need 400k tokens" in sent.message


async def test_telling_three_drafts_then_asking_makes_one_judge_call() -> None:
    model = ScriptedModel({"writer": ANSWERS, "judge": ["draft one"]})
    result = await run(load(judged()), model=model, task="dedupe a list")
    assert result.status == "ok" and result.output == "draft one"
    model.assert_complete()
    (asked,) = [r for r in model.requests if r.agent == "judge"]
    shown = [m.content or "" for m in asked.messages]
    assert shown[0] == "The task: dedupe a list"
    assert sorted(shown[1:4]) == sorted(f"From writer:\n{a}" for a in ANSWERS)
    assert shown[4] == "Pick the best draft."
    assert len(of_type(result.events, "session_told")) == 4


async def test_a_tell_along_an_undeclared_edge_is_refused_at_run_time_too() -> None:
    """Planned without the checker (which would have refused the file), the run still
    refuses the handoff: nothing is told, and the judge is never called."""
    source = judged(edges="edges judge -> human")
    program = plan_module(parse(source), source, "t.swarm")
    model = ScriptedModel({"writer": ANSWERS, "judge": ["never"]})
    result = await run(build_flow(program), model=model, task="t", raise_on_failure=False)
    assert result.status == "failed" and isinstance(result.error, TopologyError)
    (refused,) = of_type(result.events, "handoff_refused")
    assert (refused.source, refused.target, refused.via) == ("writer", "judge", "session message")
    assert [e.text for e in of_type(result.events, "session_told")] == ["The task: t"]
    assert not [r for r in model.requests if r.agent == "judge"]
