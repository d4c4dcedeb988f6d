"""`swarmflow graph`: a `.swarm` file's team and steps; what a finished run executed."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow import Agent, agent, parallel
from swarmflow.cli import main
from swarmflow.testing import FunctionModel
from tests.dsl.helpers import EXAMPLES, flow_text
from tests.runtime.helpers import run_one

FLAGSHIP = str(EXAMPLES / "parallel_coder_arbiter.swarm")


async def test_graph_of_a_run_directory(capsys: pytest.CaptureFixture[str]) -> None:
    result = await run_one(
        [Agent("a"), Agent("b")],
        lambda: parallel(lambda i: agent("a", str(i)), n=2),
        FunctionModel(lambda r: "x"),
        edges=[("a", "b")],
    )
    assert main(["graph", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "flowchart LR" in out and "a --> b" in out  # the declared topology
    assert "flowchart TD" in out and "parallel[1]" in out  # the executed graph


def test_graph_of_a_plain_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", str(tmp_path)]) == 2
    assert "events.jsonl" in capsys.readouterr().err


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2


def test_graph_prints_mermaid_team_and_steps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", FLAGSHIP]) == 0
    out = capsys.readouterr().out
    assert "flowchart LR" in out and "coder --> reviewer" in out and "human((human))" in out
    assert "flowchart TD" in out and 's0[["left = budget()"]]' in out
    assert "s0 --> s1" in out


def test_graph_prints_dot_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", FLAGSHIP, "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert 'digraph "parallel_coder_arbiter_team"' in out
    assert '"coder" -> "reviewer";' in out and '"s0" -> "s1";' in out


def test_graph_of_a_broken_file_prints_its_diagnostics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.swarm"
    broken.write_text(flow_text("  x = coder(tsk)\n  return x", agents="agent coder {}"))
    assert main(["graph", str(broken)]) == 1
    assert "unknown name 'tsk'" in capsys.readouterr().err


def test_graph_of_a_missing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", str(tmp_path / "missing.swarm")]) == 2
    assert "cannot read" in capsys.readouterr().err
