"""`swarmflow graph RUN_DIR` prints what a finished run executed."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow import Agent, agent, parallel
from swarmflow.cli import main
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import run_one


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
