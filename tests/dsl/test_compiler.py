"""Syntax tree to plan: steps, what they read and write, and the steps each waits for."""

from __future__ import annotations

from swarmflow.dsl import compile_source
from swarmflow.dsl.compile.plan import VALUE, Program, plan_module
from swarmflow.dsl.syntax.parser import parse

from .bigflow import big_flow
from .helpers import EXAMPLES, flow_text
from .test_cli import main

AB = "agent a {}\nagent b {}\nagent c {}"


def program(steps: str, **kw: str) -> Program:
    kw.setdefault("agents", AB)
    kw.setdefault("edges", "edges a -> c, b -> c, a -> b")
    source = flow_text(steps, **kw)
    prog: Program = compile_source(source, "t.swarm")
    return prog


def edges(prog: Program) -> set[tuple[str, str]]:
    return {(w, s.id) for s in prog.steps.steps.values() for w in s.waits}


def test_planning_needs_only_the_syntax_tree():
    source = (EXAMPLES / "parallel_coder_arbiter.swarm").read_text()
    prog = plan_module(parse(source), source, "x.swarm")
    assert prog.name == "parallel_coder_arbiter"
    assert [a.name for a in prog.agents] == ["coder", "reviewer", "arbiter"]
    assert prog.agents[0].options == {
        "card": "You are a coder. Make one small, tested change.",
        "tools": ("read_file", "edit", "run_shell", "submit"),
        "allowance": 400_000,
        "max_steps": 30,
    }
    assert prog.edges == [
        ("coder", "reviewer"),
        ("reviewer", "arbiter"),
        ("arbiter", "human"),
        ("coder", "arbiter"),
    ]
    assert prog.limits == {"tokens": 2e6, "calls": 400, "cost": 5.0, "seconds": 1800.0}
    assert [(n.local.id, u.module) for u in prog.module.uses for n in u.names] == [
        ("Verdict", "swarm_examples")
    ]


def test_each_statement_is_a_step_with_reads_and_writes():
    prog = program('  x = a(task)\n  y = b(task)\n  z = c("{x} {y}")\n  return z')
    steps = list(prog.steps.steps.values())
    assert [(s.kind, s.writes) for s in steps] == [
        ("agent", ("x",)),
        ("agent", ("y",)),
        ("agent", ("z",)),
        ("return", ()),
    ]
    assert steps[2].reads == {"x": "s0", "y": "s1"}
    assert steps[0].reads == {"task": None}  # from the flow's inputs
    assert list(prog.steps.outer) == ["task"]


def test_independent_steps_wait_for_no_one():
    prog = program('  x = a(task)\n  y = b(task)\n  z = c("{x} {y}")\n  return z')
    assert prog.steps.steps["s0"].waits == prog.steps.steps["s1"].waits == set()
    assert {("s0", "s2"), ("s1", "s2")} <= edges(prog)


def test_reassignment_reads_the_latest_writer():
    prog = program("  x = a(task)\n  x = b(x)\n  y = c(x)\n  return y")
    s1, s2 = prog.steps.steps["s1"], prog.steps.steps["s2"]
    assert s1.reads == {"x": "s0"} and s2.reads == {"x": "s1"}
    assert prog.steps.finals["x"] == "s1"


def test_a_session_is_a_step_whose_turns_keep_their_order():
    prog = program('  r = a(task)\n  session c {\n    send r\n    v = ask "pick"\n  }\n  return v')
    kinds = [(s.id, s.kind) for s in prog.steps.steps.values()]
    assert kinds == [("s0", "agent"), ("s1", "session"), ("s2", "return")]
    session = prog.steps.steps["s1"]
    assert session.reads == {"r": "s0"} and session.writes == ("v",)
    [turns] = session.blocks
    assert turns is not None and list(turns.outer) == ["r"]  # the session itself is inside
    assert [(s.id, s.kind) for s in turns.steps.values()] == [
        ("s1.b0.0", "operator"),
        ("s1.b0.1", "operator"),
    ]
    assert turns.steps["s1.b0.1"].waits == {"s1.b0.0"}  # turns keep their source order
    assert ("s1", "s2") in edges(prog)


def test_if_steps_hold_their_branches_and_keep_prior_values():
    prog = program('  x = a(task)\n  if task == "" { x = b(task) }\n  return x')
    branch = prog.steps.steps["s1"]
    assert branch.kind == "if" and branch.writes == ("x",)
    assert branch.reads == {"task": None, "x": "s0"}  # x keeps its value when no branch sets it
    then, orelse = branch.blocks
    assert then is not None and orelse is None
    assert list(then.steps) == ["s1.b0.0"]


def test_return_waits_for_every_step_before_it_and_holds_back_the_rest():
    prog = program('  x = a(task)\n  if task == "" { return "empty" }\n  y = b(task)\n  return y')
    assert prog.steps.steps["s1"].returns
    assert ("s0", "s1") in edges(prog) and ("s1", "s2") in edges(prog)


def test_lambda_bodies_are_graphs_and_their_free_names_are_read_by_the_step():
    prog = program('  n = 2\n  outs = parallel(n) |i| { a("{task} {i}") }\n  return outs')
    step = prog.steps.steps["s1"]
    assert set(step.reads) == {"n", "task"}
    [body] = prog.lambdas.values()
    assert list(body.outer) == ["task"] and body.value_step == next(iter(body.steps))
    assert body.steps[body.value_step].writes == (VALUE,)


def test_graphs_print_as_mermaid_and_dot():
    prog = program('  x = a(task)\n  y = b(task)\n  if task == "" { z = c(x) }\n  return y')
    mermaid = prog.steps_mermaid()
    assert mermaid.startswith("flowchart TD")
    assert 's0["x = a(task)"]' in mermaid and "subgraph s2_b0" in mermaid
    assert "s0 --> s2" in mermaid and "s0 --> s1" not in mermaid
    dot = prog.steps_dot()
    assert dot.startswith('digraph "f_steps"') and '"s0" -> "s2";' in dot


def test_the_team_prints_as_mermaid_and_dot(tmp_path, capsys):
    path = tmp_path / "t.swarm"
    path.write_text(flow_text("  return a(task).text", agents=AB, edges="edges a -> c"))
    assert main(["graph", str(path), "--which", "topology"]) == 0
    assert "human((human))" in capsys.readouterr().out
    assert main(["graph", str(path), "--which", "topology", "--format", "dot"]) == 0
    assert '"a" -> "c";' in capsys.readouterr().out


def test_a_generated_two_thousand_line_flow_checks_clean_and_compiles():
    source = big_flow(2000)
    assert len(source.splitlines()) >= 2000
    prog = compile_source(source, "big.swarm")
    assert len(prog.steps.steps) > 700
