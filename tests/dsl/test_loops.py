"""Loops (`repeat ... until`, `for`) and routing (`match`): checked, run, and equal to Python."""

from __future__ import annotations

import json

import pytest
from swarm_examples import Review

from swarmflow import run
from swarmflow.dsl import DslError, load_flow
from swarmflow.testing import FunctionModel, ScriptedModel

from . import twins
from .helpers import EXAMPLES, codes, diags, errors, flow_text, graph_nodes, load, normalised

AB = "agent a {}\nagent b {}"


def review(approved: bool) -> str:
    return json.dumps({"approved": approved, "score": 0.9, "comments": "tighten the loop"})


def review_model(approve_at: int | None) -> ScriptedModel:
    """The reviewer approves at round `approve_at` (None: never, in three rounds)."""
    rounds = 3 if approve_at is None else approve_at
    verdicts = [review(approve_at == r + 1) for r in range(rounds)]
    rejections = sum(1 for v in verdicts if '"approved": false' in v)
    coder = [f"draft {i}" for i in range(1 + rejections)]
    return ScriptedModel({"coder": coder, "reviewer": verdicts})


@pytest.mark.parametrize(("approve_at", "drafts"), [(1, 1), (2, 2), (None, 4)])
async def test_the_review_loop_stops_at_the_round_that_approves(approve_at, drafts):
    model = review_model(approve_at)
    human_answers = ["accepted by a person"]
    result = await run(
        load_flow(EXAMPLES / "review_loop.swarm"), task="t", model=model, human=human_answers
    )
    model.assert_complete()
    assert result.status == "ok", result.error
    asked = [r.agent for r in model.requests]
    assert asked.count("coder") == drafts
    assert asked.count("reviewer") == (approve_at or 3)
    if approve_at is None:
        assert result.output == "accepted by a person"
    else:
        assert result.output == f"draft {drafts - 1}"


@pytest.mark.parametrize("approve_at", [1, 2, None])
async def test_the_review_loop_records_the_same_events_as_its_python_twin(approve_at):
    dsl = load_flow(EXAMPLES / "review_loop.swarm")
    python = twins.twin(twins.review_loop, dsl)
    a_model, b_model = review_model(approve_at), review_model(approve_at)
    a = await run(dsl, task="t", model=a_model, human=["ok"])
    b = await run(python, task="t", model=b_model, human=["ok"])
    assert a.status == b.status == "ok"
    assert a.output == b.output
    assert normalised(a.events) == normalised(b.events)
    assert graph_nodes(a.events) == graph_nodes(b.events)


def triage_model(route: str) -> ScriptedModel:
    answer = json.dumps({"route": route, "reason": "a null check is missing"})
    return ScriptedModel(
        {"screener": [answer], "fixer": ["fixed it"], "writer": ["documented it"]}
    )


@pytest.mark.parametrize(
    ("route", "output", "called"),
    [
        ("fix", "fixed it", "fixer"),
        ("docs", "documented it", "writer"),
        ("close", "closed by a person", None),
    ],
)
async def test_each_route_takes_its_branch_and_equals_the_python_twin(route, output, called):
    dsl = load_flow(EXAMPLES / "route_report.swarm")
    a_model, b_model = triage_model(route), triage_model(route)
    a = await run(dsl, report="crash on empty input", model=a_model, human=["closed by a person"])
    b = await run(
        twins.twin(twins.route_report, dsl),
        report="crash on empty input",
        model=b_model,
        human=["closed by a person"],
    )
    assert a.status == "ok", a.error
    assert a.output == b.output == output
    assert [r.agent for r in a_model.requests] == ["screener", *([called] if called else [])]
    assert normalised(a.events) == normalised(b.events)
    assert graph_nodes(a.events) == graph_nodes(b.events)


ROUTED = """flow f(task: str) -> str
agent screener {}
agent fixer {}
agent writer {}
edges screener -> fixer
steps {
  pick = screener(task)
  match pick.text {
    "fix" => out = fixer("fix: {pick}")
    "docs" => out = writr("document: {task}")
    "later" => { out = writer("later: {pick}") }
  }
  return str(out)
}
"""


def test_check_catches_an_undeclared_target_and_a_missing_edge_in_any_arm():
    found = errors(ROUTED)
    assert [(d.code, d.line) for d in found] == [("unknown-agent", 10), ("handoff", 11)]
    assert "did you mean 'writer'" in found[0].message
    assert "no edge screener -> writer" in found[1].message
    warned = [d for d in diags(ROUTED) if d.code == "maybe-unassigned"]
    assert warned and "some arms of the match on line 8" in warned[0].message


@pytest.mark.parametrize(
    ("steps", "code", "text"),
    [
        ("  match 3 { else => x = 1 }\n  return str(x)", "misuse", "match compares text"),
        ('  match task { "a" => x = 1\n "a" => x = 2 }', "duplicate", "given twice"),
        ('  match task { else => x = 1\n "a" => x = 2 }', "syntax", "unexpected string"),
        ("  match task { }", "misuse", "at least one arm"),
        ("  repeat len(task) { x = 1 }", "loop-bound", "a bound that check can see"),
        ('  repeat "3" { x = 1 }', "misuse", "number of rounds"),
        ("  repeat 2.5 { x = 1 }", "misuse", "whole number"),
        ("  for x in 3 { y = x }", "misuse", "for ... in needs a list"),
        ("  for a in [1] { y = 1 }", "misuse", "already an agent"),
    ],
)
def test_loop_and_match_misuse_is_reported(steps, code, text):
    found = [d for d in diags(flow_text(steps, agents="agent a {}")) if d.code == code]
    assert found and text in found[0].message, found


def test_a_repeat_is_bounded_by_its_static_bound_for_the_budget_check():
    source = flow_text(
        "  n = clamp(len(task), 1, 8)\n  repeat n { x = a(task) }\n  repeat 9 { y = a(task) }",
        head="budget tokens 1M",
        agents="agent a { allowance 150k }",
    )
    found = [d for d in diags(source) if d.code == "budget"]
    assert [(d.severity, d.line) for d in found] == [("warning", 7), ("error", 8)]
    assert found[1].message.startswith("repeat 9 may need 1.35M tokens (a x1 per round")


def test_a_for_over_a_written_list_counts_its_items_for_the_budget():
    source = flow_text(
        '  for x in ["a", "b", "c"] { y = a(x) }',
        head="budget calls 2",
        agents="agent a {}",
    )
    [found] = [d for d in diags(source) if d.code == "budget"]
    assert found.message.startswith("for over 3 items may need 3 calls")


def test_names_a_loop_may_leave_unassigned_are_warned_about():
    source = flow_text(
        "  for x in [task] { y = x }\n  repeat 2 { z = 1 }\n"
        "  k = 0\n  repeat min(k, 2) { w = 1 }\n  return str(y) + str(z) + str(w)",
        agents="",
    )
    warned = {d.message.split("'")[1] for d in diags(source) if d.code == "maybe-unassigned"}
    assert warned == {"y", "w"}


def test_what_one_round_hands_the_next_needs_its_edge_too():
    source = flow_text(
        "  x = a(task)\n  repeat 2 {\n    y = b(x)\n    x = c(y)\n  }\n  return x.text",
        agents="agent a {}\nagent b {}\nagent c {}",
        edges="edges a -> b, b -> c",
    )
    found = errors(source)
    assert [d.code for d in found] == ["handoff"]
    assert "c's output reaches b" in found[0].message


def test_the_until_condition_reads_what_the_round_assigned():
    source = flow_text(
        "  repeat 3 { r = a(task) } until r.ok\n  return r.text", agents="agent a {}"
    )
    assert codes(source) == []


async def test_a_for_loop_runs_in_order_and_carries_names():
    source = flow_text(
        '  seen = ""\n  for w in ["x", "y", "z"] {\n    r = a("{seen}{w}")\n    seen = r.text\n'
        "  }\n  return seen",
        agents="agent a {}",
    )
    model = FunctionModel(lambda r: r.prompt + "!")
    result = await run(load(source), task="t", model=model)
    assert result.output == "x!y!z!"


async def test_return_inside_a_loop_ends_the_flow():
    source = flow_text(
        "  repeat 5 |\n", agents=""
    ).replace("repeat 5 |", 'for i in [1, 2, 3] { if i == 2 { return "stopped at {i}" } }')
    result = await run(load(source + ""), task="t", model=FunctionModel(lambda r: ""))
    assert result.output == "stopped at 2"


async def test_a_negative_round_count_fails_at_its_place():
    source = flow_text("  repeat min(n, 3) { x = 1 }\n  return 1", signature="flow f(n: int)")
    result = await run(
        load(source), n=-1, model=FunctionModel(lambda r: ""), raise_on_failure=False
    )
    assert result.status == "failed"
    assert "repeat needs a number of rounds, 0 or more; got -1" in str(result.error)


async def test_a_match_with_no_fitting_arm_and_no_else_runs_nothing():
    source = flow_text(
        '  x = "before"\n  match task { "a" => x = "a" }\n  return x', agents=""
    )
    model = FunctionModel(lambda r: "")
    assert (await run(load(source), task="zzz", model=model)).output == "before"
    assert (await run(load(source), task="a", model=model)).output == "a"


def test_until_on_the_next_line_and_arms_on_one_line_parse():
    source = flow_text(
        '  repeat 2 {\n    x = 1\n  }\n  until x == 1\n  match task { "a" => y = 1; else => y = 2 }',
        agents="",
    )
    assert errors(source) == []


def test_the_review_model_is_what_the_example_imports():
    assert Review.model_fields["approved"].annotation is bool
    with pytest.raises(DslError):
        load(flow_text("  repeat task { x = 1 }", agents=""))
