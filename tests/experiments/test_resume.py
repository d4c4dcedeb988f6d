"""Kill -9 in the middle of an experiment, run it again: nothing finished is paid again, and
no run's row or grade is lost or doubled."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.experiments.conftest import write_tasks

DECLARATION = """
import os
import anyio
from swarmflow import Agent, Team, agent, flow
from swarmflow.experiments import Arm, Experiment, FunctionGrader
from swarmflow.testing import FunctionModel

@flow(team=Team([Agent("worker")]))
async def work(n: int) -> str:
    first = await agent("worker", f"first {n}")
    second = await agent("worker", f"second {n}")
    return f"{first.text}+{second.text}"

def quick():
    return FunctionModel(lambda request: "done", name="resume-scripted")

def stalls():
    async def policy(request):
        if request.prompt.startswith("second") and os.environ.get("STALL") == "1":
            await anyio.sleep_forever()  # held here until the process is killed
        return "done"
    return FunctionModel(policy, name="resume-scripted")

EXPERIMENT = Experiment(
    name="resume", tasks=os.environ["TASKS"], concurrency=6,
    grader=FunctionGrader(fn=lambda task, result: result.output == "done+done"),
    arms=[Arm(name="quick", flow=work, demo=quick, reference=True),
          Arm(name="stalls", flow=work, demo=stalls)],
)
"""


def _start(tmp_path: Path, out: Path, stall: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TASKS": str(tmp_path / "tasks.jsonl"), "STALL": "1" if stall else ""}
    argv = [sys.executable, "-m", "swarmflow.cli", "experiment", "run",
            f"{tmp_path / 'declared.py'}:EXPERIMENT", "--demo", "--out", str(out)]  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _called(run_dir: Path) -> int:
    return sum('"type":"model_called"' in line.replace(" ", "")
               for line in _lines(run_dir / "events.jsonl"))  # fmt: skip


def _wait_until(ready: object, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    """Watch the experiment's files until `ready()` holds (the process must stay alive)."""
    deadline = time.monotonic() + seconds
    while not ready():  # type: ignore[operator]
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the experiment never got there"
        time.sleep(0.05)


def test_a_spent_budget_leaves_runs_for_a_later_call(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "inputs": {"n": n}} for n in range(4)])
    (tmp_path / "declared.py").write_text(DECLARATION)
    env = {**os.environ, "TASKS": str(tmp_path / "tasks.jsonl")}
    argv = [sys.executable, "-m", "swarmflow.cli", "experiment", "run",
            f"{tmp_path / 'declared.py'}:EXPERIMENT", "--demo", "--out", str(tmp_path / "o")]  # fmt: skip
    first = subprocess.run(
        [*argv, "--budget-tokens", "600"], env=env, capture_output=True, check=False
    )
    assert first.returncode == 1, first.stderr.decode()
    assert b"the batch budget refused a model call" in first.stderr
    left = len(_lines(tmp_path / "o/grades.jsonl"))
    assert left < 8
    second = subprocess.run(argv, env=env, capture_output=True, check=False)
    assert second.returncode == 0, second.stderr.decode()
    rows = list(csv.DictReader(_lines(tmp_path / "o/rows.csv")))
    assert len(rows) == len({(r["arm"], r["task"]) for r in rows}) == 8


def test_kill_nine_then_run_again(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "inputs": {"n": n}} for n in range(3)])
    (tmp_path / "declared.py").write_text(DECLARATION)
    out = tmp_path / "out"
    stalled = [out / "arms/stalls/runs" / f"t{n}-r1" for n in (0, 1, 2)]
    process = _start(tmp_path, out, stall=True)
    try:  # killed once the quick arm is graded and each stalled run has paid its first call
        _wait_until(lambda: len(_lines(out / "grades.jsonl")) == 3
                    and all(_called(r) == 1 for r in stalled), process)  # fmt: skip
    finally:  # and whether or not it got there: no process outlives the test
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    quick = {p: p.read_bytes() for p in out.glob("arms/quick/runs/*/events.jsonl")}
    assert len(quick) == 3
    with (out / "grades.jsonl").open("ab") as torn:  # a line cut off mid-write
        torn.write(b'{"arm": "stalls", "task": "t0", "repeat": 1, "resol')

    again = _start(tmp_path, out, stall=False)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr.decode()
    assert b"6/6 runs finished" in stdout
    assert b"swarmflow experiment: warning: " in stderr
    assert b"grades.jsonl:4: not a grade; skipped" in stderr
    assert {p: p.read_bytes() for p in out.glob("arms/quick/runs/*/events.jsonl")} == quick
    for run in stalled:  # resumed: the first call replayed from the journal, not paid again
        events = [json.loads(line) for line in _lines(run / "events.jsonl")]
        assert _called(run) == 2
        assert [e["type"] for e in events].count("call_replayed") == 1
    grades = [json.loads(line) for line in _lines(out / "grades.jsonl") if "resol'" not in line
              and not line.endswith('"resol')]  # fmt: skip
    keys = [(g["arm"], g["task"], g["repeat"]) for g in grades]
    assert len(keys) == len(set(keys)) == 6
    assert all(g["resolved"] for g in grades)
    rows = list(csv.DictReader(_lines(out / "rows.csv")))
    assert sorted((r["arm"], r["task"]) for r in rows) == sorted(
        (arm, f"t{n}") for arm in ("quick", "stalls") for n in range(3)
    )
