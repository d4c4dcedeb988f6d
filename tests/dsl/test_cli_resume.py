"""`swarmflow run --defer` pauses at a person's question; `swarmflow resume` answers it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from swarmflow.cli import main

FLOW = """\
flow ship(task: str) -> any
agent coder {}
edges coder -> human
steps {
  draft = coder(task)
  verdict = human("Ship it?", draft)
  return verdict
}
"""


def _paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    path = tmp_path / "ship.swarm"
    path.write_text(FLOW)
    argv = ["run", str(path), "--demo", "--input", "task=write the notes", "--defer"]
    assert main(argv) == 1
    first = capsys.readouterr().out
    assert "status: paused" in first
    command = re.search(r"resume: (swarmflow resume (\S+) --answer (\w+)=VALUE)", first)
    assert command is not None
    # The error names exactly the same command.
    assert f"resume with: {command.group(1)}" in first
    return command.group(2), command.group(3)


def test_a_deferred_run_pauses_and_resumes_by_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, token = _paused(tmp_path, capsys)
    assert main(["resume", run_dir, "--demo", "--answer", f'{token}="ship it"']) == 0
    second = capsys.readouterr().out
    assert "status: ok" in second and "output: ship it" in second
    assert "replayed: 1 finished calls" in second  # the draft was not written again
    assert "tokens: 0 " in second


def test_an_answer_for_another_token_asks_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, token = _paused(tmp_path, capsys)
    assert main(["resume", run_dir, "--demo", "--answer", "0123456789abcdef=yes"]) == 1
    out = capsys.readouterr().out
    assert "status: paused" in out and f"--answer {token}=VALUE" in out


def test_a_malformed_answer_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = _paused(tmp_path, capsys)
    assert main(["resume", run_dir, "--demo", "--answer", "no-equals"]) == 2
    assert "expected TOKEN=VALUE" in capsys.readouterr().err


def test_run_refuses_an_answer_and_points_at_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ship.swarm"
    path.write_text(FLOW)
    assert main(["run", str(path), "--demo", "--input", "task=x", "--answer", "t=v"]) == 2
    assert "swarmflow resume RUN_DIR --answer TOKEN=VALUE" in capsys.readouterr().err


PYTHON_FLOW = """\
from swarmflow import Agent, Team, agent, flow, human
from swarmflow.testing import FunctionModel


@flow(team=Team([Agent("coder")], edges=[("coder", "human")]))
async def ship(task: str) -> str:
    draft = await agent("coder", task)
    verdict = await human("Ship it?", draft.text)
    return f"{verdict}: {draft.text}"


def writer():
    return FunctionModel(lambda request: "the notes, written")
"""


def test_a_python_flow_with_a_model_object_pauses_and_resumes_from_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ship_flow.py").write_text(PYTHON_FLOW)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    argv = ["run", "ship_flow.py:ship", "--model-object", "ship_flow.py:writer", "--defer"]
    assert main([*argv, "--input", "task=write the notes"]) == 1
    first = capsys.readouterr().out
    found = re.search(r"resume: swarmflow resume (\S+) --answer (\w+)=VALUE", first)
    assert found is not None
    run_dir, token = found.groups()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # run.json names the flow's file by its path
    answer = ["--answer", f"{token}=shipped"]
    assert main(["resume", run_dir, *answer]) == 2  # a model object is not recorded by name
    assert "--model-object file.py:NAME" in capsys.readouterr().err
    model = ["--model-object", str(tmp_path / "ship_flow.py:writer")]
    assert main(["resume", run_dir, *model, *answer]) == 0
    second = capsys.readouterr().out
    assert "status: ok" in second and "output: shipped: the notes, written" in second
    assert "replayed: 1 finished calls" in second
