"""The `tests` grader: the product on a fresh checkout at the base commit, tests sandboxed.

The arms' flows call no model: each returns a patch given as its input, so what is graded is
exactly the patch (a `Patch` output, as a coding flow returns one).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import anyio

from swarmflow import flow
from swarmflow.experiments import Arm, Experiment, TestsGrader, run_experiment
from swarmflow.tools.sandbox import bwrap_problem
from tests.experiments.conftest import BREAKS, FAST_PYTEST, FIXED, diff_for, write_tasks


@flow
async def hand_in(patch: str) -> dict[str, str]:
    """Returns the patch it is given, as a run's `Patch` output is recorded."""
    return {"diff": patch, "base": ""}


SLOW = "import time\n\ndef double(x):\n    time.sleep(300)\n    return x * 2\n"


def test_fixing_not_fixing_breaking_and_hanging_patches(repo: Path, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{
        "id": "double", "repo": str(repo), "test": FAST_PYTEST,
        "FAIL_TO_PASS": ["tests/test_calc.py::test_two"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_three"],
    }])  # fmt: skip
    patches = {
        "fixes": diff_for(repo, FIXED),
        "leaves": "",
        "breaks": diff_for(repo, BREAKS),
        "hangs": diff_for(repo, SLOW),
        "garbage": "--- a/nowhere\n+++ b/nowhere\n@@ -1 +1 @@\n-x\n+y\n",
    }
    arms = [Arm(name=name, flow=hand_in, inputs={"patch": p}, reference=name == "fixes")
            for name, p in patches.items()]  # fmt: skip
    experiment = Experiment(name="grading", arms=arms, tasks=tasks,
                            grader=TestsGrader(seconds=6))  # fmt: skip
    out = tmp_path / "out"
    result = anyio.run(lambda: run_experiment(experiment, out=out, model="unused"))
    assert (result.total, result.finished) == (5, 5)
    lines = (out / "grades.jsonl").read_text().splitlines()
    grades = {g["arm"]: g for g in map(json.loads, lines)}
    assert {a: g["resolved"] for a, g in grades.items()} == {
        "fixes": True,
        "leaves": False,
        "breaks": False,
        "hangs": False,
        "garbage": False,
    }
    assert "test_two" in grades["leaves"]["note"]  # FAIL_TO_PASS still fails
    assert "test_three" in grades["breaks"]["note"]  # PASS_TO_PASS broken
    assert "ran past 6 s and was killed" in grades["hangs"]["note"]
    assert "does not apply" in grades["garbage"]["note"]
    if bwrap_problem() is None:
        assert grades["fixes"]["sandboxed"] is True
    # The task's repository itself is untouched: every grading used a fresh checkout.
    assert (repo / "pkg/calc.py").read_text().startswith("def double(x):\n    return x + x")
    rows = list(csv.DictReader((out / "rows.csv").read_text().splitlines()))
    assert sorted(r["arm"] for r in rows) == sorted(patches)
