"""One experiment records its grader, its arms' debris and limits beside its seeded order and
pinned modes; its runs, graded as their lines are written, are said once to be graded outside
the sandbox, before the first grade; and rows.csv has every column."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, Team, agent, flow
from swarmflow.experiments import Arm, Experiment, TestsGrader, run_experiment
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import FAST_PYTEST, write_tasks

OUTSIDE = "outside the sandbox"


@flow(team=Team([Agent("worker")]))
async def hand_in(issue: str) -> dict[str, str]:
    await agent("worker", issue)
    return {"diff": "", "base": ""}


def _declared(tmp_path: Path, repo: Path) -> Experiment:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": name, "inputs": {"issue": "double() is wrong"}, "repo": str(repo),
         "test": FAST_PYTEST, "FAIL_TO_PASS": ["tests/test_calc.py::test_two"]}
        for name in ("t1", "t2")
    ])  # fmt: skip
    return Experiment(
        name="records", tasks=tasks, grader=TestsGrader(seconds=60, sandbox="none"),
        run_budget={"seconds": 600}, seed=3, pin_modes=True, concurrency=3,
        arms=[Arm(name="a", flow=hand_in, reference=True),
              Arm(name="b", flow=hand_in, debris=("*.log",), run_budget={"tokens": 1000}),
              Arm(name="c", flow=hand_in)],
    )  # fmt: skip


def test_records_grading_and_rows_of_one_experiment(tmp_path: Path, repo: Path) -> None:
    out = tmp_path / "out"
    seen: list[tuple[bool, int]] = []

    def progress(state: Any) -> None:
        seen.append((any(OUTSIDE in w for w in state.warnings), state.graded))

    model = FunctionModel(lambda request: "done")
    experiment = _declared(tmp_path, repo)
    result = anyio.run(lambda: run_experiment(experiment, out=out, model=model,
                                              on_progress=progress))  # fmt: skip
    assert result.finished == 6 and result.unfinished == 0

    record = json.loads((out / "experiment.json").read_text())
    assert record["grader_spec"]["sandbox"] == "none" and record["grader_spec"]["restore_tests"]
    arms = {arm["name"]: arm for arm in record["arms"]}
    assert arms["a"]["limits"] == {"seconds": 600} and arms["a"]["debris"] == []
    assert arms["b"]["limits"] == {"tokens": 1000, "seconds": 600}
    assert arms["b"]["debris"] == ["*.log"]
    assert record["seed"] == 3 and record["pin_modes"] is True
    assert sorted(record["order"]) == sorted(f"{a}/{t}/r1" for a in "abc" for t in ("t1", "t2"))

    # Said once, before the first grade, though the runs are graded as their lines come.
    assert sum(OUTSIDE in w for w in result.warnings) == 1
    assert all(said for said, graded in seen if graded > 0)
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events] == ["sandbox_unavailable"]
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    assert len(grades) == 6
    assert {g["grader"] for g in grades} == {"tests(seconds=60, sandbox=none, restore_tests=True)"}

    with (out / "rows.csv").open(newline="") as rows:
        header = next(csv.reader(rows))
    assert header[header.index("run_dir") + 1 :] == [
        "tests_edited",
        "grade_error",
        "output_modes",
        "factors",
    ]
