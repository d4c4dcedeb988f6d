"""`swarmflow batch`: a .swarm or module:flow over a task list; summary, exit status, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from swarmflow.cli import main
from swarmflow.record.files import EVENTS_FILE
from tests.dsl.helpers import flow_text
from tests.test_cli_run import _SilentServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"task": f"job {i}"}) + "\n" for i in range(5)))
    return path


@pytest.fixture
def swarm(tmp_path: Path) -> Path:
    path = tmp_path / "one.swarm"
    path.write_text(flow_text("  x = a(task)\n  return x.text"))
    return path


def test_a_swarm_flow_over_a_task_list_with_the_demo_model(
    tmp_path: Path, tasks: Path, swarm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["batch", str(swarm), "--inputs", str(tasks), "--out", str(out), "--demo"]
    assert main([*argv, "--concurrency", "2", "--budget-tokens", "1000000"]) == 0
    printed = capsys.readouterr()
    assert "ok" in printed.out and "results: " in printed.out
    assert "done 5/5" in printed.err
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["input"]["task"] for r in rows) == [f"job {i}" for i in range(5)]
    assert all(r["status"] == "ok" and "job" in r["output"] for r in rows)
    assert main(argv) == 0  # again: every task is skipped
    assert "done 5/5 (5 skipped)" in capsys.readouterr().err


def test_a_python_flow_by_module_name_and_a_failing_task_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"n": 1}\n{"n": 2, "fail": true}\n')
    flow = "tests.batches.batch_target:solve"
    code = main(["batch", flow, "--inputs", str(tasks), "--out", str(tmp_path / "o"), "--demo"])
    assert code == 1
    assert "failed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flow", "message"),
    [
        ("nowhere.swarm", "cannot read nowhere.swarm"),
        ("no_such_module_x:f", "cannot import the flow from no_such_module_x"),
        ("tests.batches.batch_target:task_list", "is not a @flow"),
        ("just-a-name", "give a .swarm file, module:flow or file.py:flow"),
    ],
)
def test_a_flow_that_cannot_be_loaded_is_named(
    tmp_path: Path, tasks: Path, flow: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", flow, "--inputs", str(tasks), "--out", str(tmp_path), "--demo"]) == 1
    assert message in capsys.readouterr().err


def test_usage_errors(tmp_path: Path, swarm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", str(swarm), "--inputs", str(tmp_path / "none.jsonl")]) == 2
    assert "--model NAME, or --demo" in capsys.readouterr().err
    missing = ["batch", str(swarm), "--inputs", str(tmp_path / "none.jsonl"), "--demo"]
    assert main(missing) == 1
    assert "cannot read the task list" in capsys.readouterr().err


def test_ctrl_c_exits_130_with_every_run_closed(tmp_path: Path, tasks: Path, swarm: Path) -> None:
    server = _SilentServer()
    env = {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1",
        "OPENAI_API_KEY": "sk-test",
    }
    env.pop("SWARMFLOW_BLOCK_MODEL_CALLS", None)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "swarmflow.cli", "batch", str(swarm), "--inputs", str(tasks)]
    proc = subprocess.Popen(
        [*cmd, "--out", str(out), "--model", "m", "--concurrency", "3"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.connected.wait(60), "the batch never called its model"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        server.close()
    assert proc.returncode == 130, err
    assert "interrupted; finished tasks are in" in err
    assert (out / "results.jsonl").read_text() == ""
    logs = list((out / "runs").glob(f"*/{EVENTS_FILE}"))
    assert logs
    for log in logs:
        last = json.loads(log.read_text().splitlines()[-1])
        assert last["type"] == "run_finished" and last["status"] == "cancelled"
    assert not list((out / "runs").glob("*/run.pid"))
