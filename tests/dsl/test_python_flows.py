"""`swarmflow check module:flow`: a Python flow's declaration, checked without running it."""

from __future__ import annotations

import textwrap

import pytest

from swarmflow.cli.python_flows import check_python_flow, load_python_flow

from .test_cli import main

MODULE = """
from swarmflow import Agent, Flow, Team, agent

team = Team(
    [
        Agent("coder", allowance=2_000_000),
        Agent("reviewer"),
        Agent("ghost"),
    ],
    edges=[("coder", "reviwer")],
)


async def _fix(task: str) -> str:
    draft = await agent("coder", task)
    return (await agent("reviewer", draft)).text


fix = Flow(_fix, team=team, budget={"tokens": 1_000_000})
not_a_flow = 3
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = f"pyflow_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_the_declaration_problems_are_found_where_the_module_declares_them(module):
    found, _ = check_python_flow(load_python_flow(f"{module}:fix"))
    got = {(d.code, d.severity, d.line) for d in found}
    assert ("unknown-agent", "error", 10) in got  # the edge's misspelt end
    assert ("unused-agent", "warning", 8) in got  # ghost is never called
    assert ("budget", "error", 6) in got  # coder's allowance is above the budget
    assert all(d.file.endswith(f"{module}.py") for d in found)
    unknown = next(d for d in found if d.code == "unknown-agent")
    assert "did you mean 'reviewer'" in unknown.message


def test_the_command_line_checks_python_flows(module, capsys):
    assert main(["check", f"{module}:fix"]) == 1
    out = capsys.readouterr().out
    assert f"{module}.py:10:" in out and "unknown agent 'reviwer'" in out
    assert main(["check", f"{module}:not_a_flow"]) == 2
    assert "not a swarmflow Flow" in capsys.readouterr().err
    assert main(["check", "no_such_module_anywhere:fix"]) == 2


def test_a_clean_python_flow_checks_clean(capsys):
    assert main(["check", "swarm_examples:parallel_coder_arbiter"]) == 0
    assert capsys.readouterr().out == (
        "swarm_examples:parallel_coder_arbiter: ok "
        "(flow parallel_coder_arbiter: 3 agents, 4 edges)\n"
    )


def test_graph_draws_a_python_flows_team(module, capsys):
    assert main(["graph", f"{module}:fix"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart LR")
    assert "coder[coder]" in out and "ghost[ghost]" in out and "coder --> reviwer" in out
    assert main(["graph", f"{module}:fix", "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert 'digraph "_fix_team"' in dot
    assert '"coder" -> "reviwer";' in dot


def test_graph_of_a_python_flow_refuses_what_it_cannot_draw(module, capsys):
    assert main(["graph", f"{module}:fix", "--which", "steps"]) == 2
    assert "steps are code" in capsys.readouterr().err
    assert main(["graph", f"{module}:not_a_flow"]) == 2
    assert "not a swarmflow Flow" in capsys.readouterr().err
    assert main(["graph", f"{module}_missing:fix"]) == 2
    assert "cannot import" in capsys.readouterr().err
