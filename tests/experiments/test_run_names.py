"""An experiment's runs are named `<task>-r<repeat>`; an experiment folder written when they
were named by place (`task-000001`) is read and run on in that layout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio

from swarmflow import Agent, Team, agent, flow
from swarmflow.experiments import Arm, Experiment, FunctionGrader, run_experiment
from swarmflow.experiments.report import read_experiment
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import write_tasks


@flow(team=Team([Agent("worker")]))
async def work(task: str) -> str:
    return (await agent("worker", task)).text


def _experiment(tmp_path: Path) -> Experiment:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": i, "inputs": {"task": i}} for i in ("median", "Median", "leap")],
    )
    return Experiment(
        name="names", tasks=tasks, repeats=2, grader=FunctionGrader(fn=lambda task, r: True),
        arms=[Arm(name="a", flow=work, reference=True), Arm(name="b", flow=work)],
    )  # fmt: skip


def _run(experiment: Experiment, out: Path, calls: list[str]) -> None:
    model = FunctionModel(lambda request: calls.append("call") or "done")
    anyio.run(lambda: run_experiment(experiment, out=out, model=model))


def test_runs_are_named_after_task_and_repeat(tmp_path: Path) -> None:
    out, calls = tmp_path / "out", []
    _run(_experiment(tmp_path), out, calls)
    names = ["median-r1", "median-r2", "Median-r1-2", "Median-r2-2", "leap-r1", "leap-r2"]
    assert sorted(os.listdir(out / "arms/a/runs")) == sorted(names)
    rows = {(r.task, r.repeat): r.run_dir for arm in read_experiment(out).arms for r in arm.rows
            if arm.name == "b"}  # fmt: skip
    assert rows[("Median", 2)].endswith("arms/b/runs/Median-r2-2")


def _to_positional_layout(arm: Path, names: list[str]) -> None:
    """`arm` as a batch named its runs before: the i-th run `task-00000i`, in results too."""
    for index, name in enumerate(names, 1):
        (arm / "runs" / name).rename(arm / "runs" / f"task-{index:06d}")
    lines = [json.loads(x) for x in (arm / "results.jsonl").read_text().splitlines()]
    for line in lines:
        index = names.index(line["task"]) + 1
        line["task"] = f"task-{index:06d}"
        line["run_dir"] = str(arm / "runs" / line["task"])
    (arm / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_an_experiment_folder_of_the_older_layout_is_read_and_run_on(tmp_path: Path) -> None:
    out, calls = tmp_path / "out", []
    experiment = _experiment(tmp_path)
    _run(experiment, out, calls)
    names = ["median-r1", "median-r2", "Median-r1-2", "Median-r2-2", "leap-r1", "leap-r2"]
    for arm in ("a", "b"):
        _to_positional_layout(out / "arms" / arm, names)
    (out / "rows.csv").unlink()
    before = read_experiment(out)
    assert all(r.run_dir.endswith(f"runs/task-00000{i}")
               for arm in before.arms for i, r in enumerate(arm.rows, 1))  # fmt: skip
    grades = (out / "grades.jsonl").read_text().splitlines()
    kept = [g for g in grades if json.loads(g)["arm"] == "a"]
    (out / "grades.jsonl").write_text("".join(g + "\n" for g in kept))  # b's to grade again
    calls.clear()
    _run(experiment, out, calls)  # nothing is run or paid again; b's runs graded from there
    assert calls == []
    assert len((out / "grades.jsonl").read_text().splitlines()) == 12
    assert sorted(os.listdir(out / "arms/b/runs")) == [f"task-00000{i}" for i in range(1, 7)]
    assert len((out / "rows.csv").read_text().splitlines()) == 1 + 12
