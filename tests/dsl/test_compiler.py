"""Syntax tree to graph IR: steps, what they read and write, and the edges between them."""

from __future__ import annotations

from swarmflow.dsl import compile_source
from swarmflow.dsl.compiler import compile_module
from swarmflow.dsl.ir import VALUE, Program
from swarmflow.dsl.parser import parse

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
    return set(prog.steps.graph.edges)


def test_compile_needs_only_the_syntax_tree():
    source = (EXAMPLES / "parallel_coder_arbiter.swarm").read_text()
    prog = compile_module(parse(source), source, "x.swarm")
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
    assert [(i.local, i.module) for i in prog.imports] == [
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
    assert prog.steps.outer == ("task",)


def test_independent_steps_have_no_path_between_them():
    prog = program('  x = a(task)\n  y = b(task)\n  z = c("{x} {y}")\n  return z')
    assert prog.steps.independent("s0", "s1")
    assert not prog.steps.independent("s0", "s2")
    assert {("s0", "s2"), ("s1", "s2")} <= edges(prog)


def test_reassignment_reads_the_latest_writer():
    prog = program("  x = a(task)\n  x = b(x)\n  y = c(x)\n  return y")
    s1, s2 = prog.steps.steps["s1"], prog.steps.steps["s2"]
    assert s1.reads == {"x": "s0"} and s2.reads == {"x": "s1"}
    assert prog.steps.finals["x"] == "s1"


def test_sessions_open_chain_their_turns_and_close():
    prog = program('  r = a(task)\n  session c {\n    send r\n    v = ask "pick"\n  }\n  return v')
    kinds = [(s.id, s.kind) for s in prog.steps.steps.values()]
    assert kinds == [
        ("s0", "agent"),
        ("s1", "session"),
        ("s2", "operator"),
        ("s3", "operator"),
        ("s4", "session_end"),
        ("s5", "return"),
    ]
    assert {("s1", "s2"), ("s2", "s3"), ("s3", "s4"), ("s0", "s2")} <= edges(prog)
    handle = prog.steps.steps["s1"].writes[0]
    assert prog.sessions == {(10, 5): handle, (11, 9): handle}


def test_if_steps_hold_their_branches_and_keep_prior_values():
    prog = program('  x = a(task)\n  if task == "" { x = b(task) }\n  return x')
    branch = prog.steps.steps["s1"]
    assert branch.kind == "if" and branch.writes == ("x",)
    assert branch.priors == {"x": "s0"}
    then, orelse = branch.branches
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
    assert body.outer == ("task",) and body.value_step == next(iter(body.steps))
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
