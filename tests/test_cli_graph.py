"""`swarmflow graph`: a `.swarm` file's team and steps; what a finished run executed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from swarmflow import Agent, agent, parallel
from swarmflow.cli import main
from swarmflow.record.files import EVENTS_FILE
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
    assert "flowchart TD" in out and "parallel[1]" in out  # the executed graph, alone
    assert "flowchart LR" not in out


def test_graph_of_a_plain_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", str(tmp_path)]) == 2
    assert EVENTS_FILE in capsys.readouterr().err


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2


def test_graph_prints_the_steps_of_a_file_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", FLAGSHIP]) == 0
    out = capsys.readouterr().out
    assert "flowchart TD" in out and 's0[["left = budget()"]]' in out
    assert "s0 --> s1" in out and "flowchart LR" not in out


def test_graph_prints_dot_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", FLAGSHIP, "--format", "dot"]) == 0
    assert '"s0" -> "s1";' in capsys.readouterr().out
    assert main(["graph", FLAGSHIP, "--format", "dot", "--which", "topology"]) == 0
    out = capsys.readouterr().out
    assert 'digraph "parallel_coder_arbiter_team"' in out and '"coder" -> "reviewer";' in out


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


# -- one diagram at a time; the executed graph with unique ids and every edge it followed ----


@pytest.fixture
async def two_step_run() -> Path:
    """A run whose executed graph has a fan-out followed by a second agent call."""

    async def body() -> str:
        await parallel(lambda i: agent("a", str(i)), n=2)
        return (await agent("b", "then")).text

    result = await run_one(
        [Agent("a"), Agent("b")], body, FunctionModel(lambda r: "x"), edges=[("a", "b")]
    )
    return result.run_dir


@pytest.mark.parametrize(
    ("which", "expected", "absent"),
    [
        ("topology", "coder --> reviewer", "flowchart TD"),
        ("steps", "s0 --> s1", "human((human))"),
    ],
)
def test_a_file_prints_the_one_diagram_asked_for(
    capsys: pytest.CaptureFixture[str], which: str, expected: str, absent: str
) -> None:
    assert main(["graph", FLAGSHIP, "--which", which]) == 0
    out = capsys.readouterr().out
    assert expected in out and absent not in out
    assert out.count("flowchart") == 1


def test_the_run_graph_has_unique_ids_and_every_edge_it_followed(
    two_step_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", str(two_step_run), "--which", "run"]) == 0
    out = capsys.readouterr().out
    assert out.count("flowchart") == 1 and "flowchart LR" not in out
    ids = [line.split("[", 1)[0].strip() for line in out.splitlines() if '["' in line]
    assert len(ids) == len(set(ids)) == 6  # parallel, 2 branches, 2 agent calls, agent b
    assert "n0 --> n1" in out and "n1 --> n2" in out  # inside: parallel -> branch -> agent
    assert "n0 -.-> n5" in out  # then: the fan-out, followed by agent b
    assert main(["graph", str(two_step_run), "--which", "topology"]) == 0
    assert "a --> b" in capsys.readouterr().out


def test_wrong_diagram_for_the_source_is_exit_2(
    two_step_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", str(two_step_run), "--which", "steps"]) == 2
    assert "no step graph" in capsys.readouterr().err
    assert main(["graph", FLAGSHIP, "--which", "run"]) == 2
    assert "needs a run directory" in capsys.readouterr().err


def test_dot_of_a_run(two_step_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", str(two_step_run), "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('digraph "f_run" {') and "n0 -> n5 [style=dashed];" in out


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz (apt-get install graphviz)")
@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG"), ("svg", b"<svg")])
def test_png_and_svg_through_graphviz(
    two_step_run: Path, tmp_path: Path, fmt: str, magic: bytes
) -> None:
    out = tmp_path / f"run.{fmt}"
    assert main(["graph", str(two_step_run), "--format", fmt, "-o", str(out)]) == 0
    assert magic in out.read_bytes()[:400]
    steps = tmp_path / f"steps.{fmt}"
    assert main(["graph", FLAGSHIP, "--format", fmt, "-o", str(steps)]) == 0
    assert magic in steps.read_bytes()[:400]


def test_png_without_graphviz_is_a_clear_error(
    two_step_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere on it
    assert main(["graph", str(two_step_run), "--format", "png"]) == 2
    err = capsys.readouterr().err
    assert "needs Graphviz's `dot`" in err and err.count("\n") == 1
