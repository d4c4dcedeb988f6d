"""Honest accounting after kill -9: a run killed inside an agent call after some of its model
calls settled, then run again, reports the tokens an uninterrupted run reports, and says what
was replayed at 0 and what was paid again."""

from __future__ import annotations

import csv
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
from swarmflow.core.messages import Usage
from swarmflow.testing import FunctionModel, Step, tool_call

TEAM = Team([Agent("worker", tools=["message_agent"]), Agent("helper")],
            edges=[("worker", "helper")])

@flow(team=TEAM)
async def work(n: int) -> str:
    return (await agent("worker", f"task {n}")).text

def billed(request, text=None, calls=()):
    # What a server would bill: the request's own size (a fake's default usage follows the
    # run's estimator, which a replay teaches differently).
    sent = sum(len(m.content or "") for m in request.messages)
    return Step(text=text, tool_calls=tuple(calls), usage=Usage(sent // 4 + 10, 5))

def model(stall):
    async def policy(request):
        if request.agent == "helper":
            return billed(request, "helped with " + request.prompt)
        asked = sum(1 for m in request.messages if m.role == "tool")
        if asked < 2:
            return billed(request, None, [tool_call("message_agent", to="helper", text=f"help {asked}")])
        if stall and os.environ.get("STALL") == "1":
            await anyio.sleep_forever()  # held here until the process is killed
        return billed(request, "done")
    return lambda: FunctionModel(policy, name="accounting-scripted")

EXPERIMENT = Experiment(
    name="accounting", tasks=os.environ["TASKS"], concurrency=4,
    grader=FunctionGrader(fn=lambda task, result: result.output == "done"),
    arms=[Arm(name="whole", flow=work, demo=model(False), reference=True),
          Arm(name="killed", flow=work, demo=model(True))],
)
"""


def _start(tmp_path: Path, out: Path, stall: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TASKS": str(tmp_path / "tasks.jsonl"), "STALL": "1" if stall else ""}
    argv = [sys.executable, "-m", "swarmflow.cli", "experiment", "run",
            f"{tmp_path / 'declared.py'}:EXPERIMENT", "--demo", "--out", str(out)]  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip


def _called(run_dir: Path) -> int:
    path = run_dir / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return sum('"type":"model_called"' in line.replace(" ", "") for line in lines)


def test_a_killed_and_resumed_runs_tokens_equal_an_uninterrupted_runs(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "inputs": {"n": n}} for n in range(2)])
    (tmp_path / "declared.py").write_text(DECLARATION)
    out = tmp_path / "out"
    killed = [out / "arms/killed/runs" / f"t{n}-r1" for n in (0, 1)]
    process = _start(tmp_path, out, stall=True)
    # Killed once the uninterrupted arm is graded and each killed run is inside the worker's
    # agent call, its two model calls and the helper's settled.
    deadline = time.monotonic() + 120
    grades = out / "grades.jsonl"
    try:
        while not (grades.exists() and len(grades.read_text().splitlines()) == 2
                   and all(_called(r) == 4 for r in killed)):  # fmt: skip
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the experiment never got there"
            time.sleep(0.05)
    finally:  # killed whether or not it got there: no process outlives the test
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()

    again = _start(tmp_path, out, stall=False)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr.decode()
    with (out / "rows.csv").open() as fh:
        rows = {(r["arm"], r["task"]): r for r in csv.DictReader(fh)}
    for task in ("t0", "t1"):
        whole, resumed = rows[("whole", task)], rows[("killed", task)]
        assert resumed["resolved"] == whole["resolved"] == "True"
        assert int(resumed["tokens"]) == int(whole["tokens"]) > 0
        assert int(whole["tokens_replayed"]) == int(whole["tokens_repaid"]) == 0
        assert int(resumed["tokens_replayed"]) > 0  # the worker's two settled calls
        assert 0 < int(resumed["tokens_repaid"]) < int(resumed["tokens"])  # the one in flight
