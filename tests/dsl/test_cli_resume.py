"""`swarmflow run --defer` pauses at a person's question; `--answer TOKEN=...` resumes it."""

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


def test_a_deferred_run_pauses_and_resumes_by_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ship.swarm"
    path.write_text(FLOW)
    argv = ["run", str(path), "--demo", "--input", "task=write the notes"]
    assert main([*argv, "--defer"]) == 1
    first = capsys.readouterr().out
    assert "status: paused" in first
    token = re.search(r"paused: answer token (\w+)", first)
    assert token is not None and f"--answer {token.group(1)}=ANSWER" in first
    assert main([*argv, "--answer", f'{token.group(1)}="ship it"']) == 0
    second = capsys.readouterr().out
    assert "status: ok" in second and "output: ship it" in second


def test_a_malformed_answer_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ship.swarm"
    path.write_text(FLOW)
    assert main(["run", str(path), "--demo", "--input", "task=x", "--answer", "no-equals"]) == 2
    assert "expected TOKEN=VALUE" in capsys.readouterr().err
