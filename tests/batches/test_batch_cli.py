"""`swarmflow batch`: a .swarm or Python flow over a task list; summary, exit status, Ctrl-C,
and `--retry-failed`."""

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
from tests.batches.batch_target import flaky_tasks
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
        ("no_such_module_x:f", "no module 'no_such_module_x' on sys.path or in"),
        ("tests.batches.batch_target:task_list", "is a function, not a swarmflow Flow"),
        ("just-a-name", "give a .swarm file, file.py:NAME or module:NAME"),
    ],
)
def test_a_flow_that_cannot_be_loaded_is_one_line_and_exit_2(
    tmp_path: Path, tasks: Path, flow: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", flow, "--inputs", str(tasks), "--out", str(tmp_path), "--demo"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_usage_errors(tmp_path: Path, swarm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", str(swarm), "--inputs", str(tmp_path / "none.jsonl")]) == 2
    assert "--model-object file.py:NAME" in capsys.readouterr().err
    missing = ["batch", str(swarm), "--inputs", str(tmp_path / "none.jsonl"), "--demo"]
    assert main(missing) == 2
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


def test_retry_failed_runs_only_the_tasks_that_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag, out, tasks = tmp_path / "flag", tmp_path / "out", tmp_path / "t.jsonl"
    flag.touch()
    tasks.write_text("".join(json.dumps(t) + "\n" for t in flaky_tasks(str(flag), 4)))
    argv = ["batch", "tests.batches.batch_target:flaky", "--inputs", str(tasks),
            "--out", str(out), "--demo"]  # fmt: skip
    assert main(argv) == 1
    first = (out / "results.jsonl").read_text().splitlines()
    flag.unlink()
    assert main(argv) == 1  # a plain re-run keeps the failures as they are
    assert (out / "results.jsonl").read_text().splitlines() == first
    events = {p: p.read_bytes() for p in out.glob(f"runs/*/{EVENTS_FILE}")}
    capsys.readouterr()
    assert main([*argv, "--retry-failed"]) == 0
    assert "done 4/4 (2 skipped)" in capsys.readouterr().err
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task"] for r in rows) == [f"task-00000{i}" for i in range(1, 5)]
    assert all(r["status"] == "ok" for r in rows)
    assert sorted(r["input"]["n"] for r in rows if r["resumed"]) == [1, 3]
    kept = {json.loads(x)["task"]: x for x in first if json.loads(x)["status"] == "ok"}
    assert kept and all(kept[r["task"]] == json.dumps(r) for r in rows if r["task"] in kept)
    ran = [p for p, data in events.items() if p.read_bytes() != data]
    assert sorted(p.parent.name for p in ran) == ["task-000002", "task-000004"]
