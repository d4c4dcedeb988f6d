"""Every command that takes a flow takes the same three references, from the flow's own folder,
with no `PYTHONPATH`: `flow.swarm`, `file.py:flow` and `module:flow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmflow.cli import main
from tests.dsl.helpers import flow_text

ROOT = Path(__file__).resolve().parents[1]
FLOW_PY = '''
from swarmflow import Agent, Team, agent, flow


@flow(team=Team([Agent("a")]))
async def f(task: str) -> str:
    """The Python twin of the .swarm flow: one call of agent a."""
    return (await agent("a", task)).text
'''
SWARM = flow_text("  x = a(task)\n  return x.text", agents="agent a {}")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A folder holding a `.swarm` flow and a Python module (named for this test, so that no
    other test's module of that name is found), entered as the user's current directory, with
    nothing of it on sys.path."""
    module = f"flows_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(FLOW_PY)
    (tmp_path / "f.swarm").write_text(SWARM)
    monkeypatch.chdir(tmp_path)
    here = {"", ".", str(tmp_path)}
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in here])
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    yield tmp_path, module
    sys.modules.pop(module, None)


def _refs(module: str) -> list[str]:
    return ["f.swarm", f"{module}.py:f", f"{module}:f"]


def test_check_takes_all_three(
    folder: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, module = folder
    assert main(["check", *_refs(module)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("which", range(3))
def test_graph_run_and_batch_take_each(
    folder: tuple[Path, str], which: int, capsys: pytest.CaptureFixture[str]
) -> None:
    here, module = folder
    ref = _refs(module)[which]
    assert main(["graph", ref, "--which", "topology"]) == 0
    assert "a[a]" in capsys.readouterr().out
    assert main(["run", ref, "--demo", "--input", "task=fix it", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "ok" and "fix it" in report["output"]
    (here / "tasks.jsonl").write_text('{"task": "one"}\n{"task": "two"}\n')
    assert main(["batch", ref, "--inputs", "tasks.jsonl", "--out", "b", "--demo"]) == 0
    assert "ok              2" in capsys.readouterr().out


def test_run_types_a_python_flows_inputs(
    folder: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    here, module = folder
    (here / "typed.py").write_text(
        "from swarmflow import Team, flow\n\n"
        "@flow(team=Team([]))\n"
        "async def add(n: int, xs: list[int], loud: bool = False) -> int:\n"
        "    return n + sum(xs) + loud\n"
    )
    argv = ["run", "typed.py:add", "--demo", "--input", "n=40", "--input", "xs=[1]"]
    assert main([*argv, "--input", "loud=yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == 42
    assert main([*argv, "--input", "loud=maybe"]) == 2
    assert "input 'loud' is bool: 'maybe' is not one" in capsys.readouterr().err


def test_the_console_script_finds_a_module_in_the_current_directory(tmp_path: Path) -> None:
    """As a user meets it: `.venv/bin/swarmflow`, run from the flow's folder, no PYTHONPATH."""
    (tmp_path / "myflows.py").write_text(FLOW_PY)
    (tmp_path / "f.swarm").write_text(SWARM)
    script = Path(sys.executable).with_name("swarmflow")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SWARMFLOW_RUNS"] = str(tmp_path / "runs")
    done = subprocess.run(
        [str(script), "check", "f.swarm", "myflows.py:f", "myflows:f"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ran = subprocess.run(
        [str(script), "run", "myflows:f", "--demo", "--input", "task=hello"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ran.returncode == 0 and "status: ok" in ran.stdout, ran.stderr
