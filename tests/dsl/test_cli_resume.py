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
