"""What the seeds' examples grade with: a count of tests passed, and a scripted rubric judge.

`count_tests` is a function grader (`FunctionGrader(fn=count_tests)`): it applies the run's
product to a fresh copy of the task's repository and runs the task's tests there (in the
sandbox the `tests` grader uses, where bubblewrap works), and its
score is the share of the task's `data.tests` that pass, so the report's weighted and macro
rates count tests (STORM's). The product is the run's patch when its output holds one (a list
of patches is applied one by one, in order, and a patch that no longer applies is dropped: the
merge of worktrees at the end), else the run's checkout as it left it.

`scripted_judge` is the `--demo` stand-in for a rubric judge: an item passes when the answer
holds the item's first word. It is a script, not a model, and its runs say so.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel
from swarmflow.tools.sandbox import ShellPolicy, bwrap_argv, bwrap_problem

GIT = ["git", "-c", "user.name=seed", "-c", "user.email=seed@example.invalid"]


def count_tests(task: Any, outcome: Any) -> float:
    """The share of the task's tests that pass with the run's product."""
    if outcome.status != "ok":
        return 0.0
    with tempfile.TemporaryDirectory(prefix="seed-grade-") as scratch:
        where = Path(scratch) / "repo"
        patches = _patches(outcome.output)
        if patches is None:
            shutil.copytree(
                outcome.checkout,
                where,
                symlinks=True,  # links stay links
                ignore=shutil.ignore_patterns(".git"),
            )
        else:
            subprocess.run([*GIT, "clone", "-q", task.repo, str(where)], check=True,
                           capture_output=True)  # fmt: skip
            for diff in patches:  # a patch that no longer applies is dropped
                subprocess.run([*GIT, "apply", "--whitespace=nowarn", "-"], cwd=where,
                               input=diff.encode(), capture_output=True, check=False)  # fmt: skip
        passed = _passed(where, list(task.data.get("select", [])))
    return min(1.0, passed / int(task.data["tests"]))


def _patches(output: Any) -> list[str] | None:
    if isinstance(output, dict) and isinstance(output.get("patches"), list):
        return [p for p in output["patches"] if isinstance(p, str) and p.strip()]
    if isinstance(output, dict) and isinstance(output.get("diff"), str):
        return [output["diff"]]
    return None


def _passed(repo: Path, select: list[str]) -> int:
    """How many of the selected tests pass, run as the `tests` grader runs them: under
    bubblewrap where it works (the copy read-write, the system read-only, no network, a
    cleared environment; killed with everything it started after two minutes), else on the
    host."""
    command = " ".join(["PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1",
                        shlex.quote(sys.executable), "-m pytest -q -p no:cacheprovider",
                        *(shlex.quote(s) for s in select)])  # fmt: skip
    if bwrap_problem() is None:
        argv = bwrap_argv(repo, command, ShellPolicy())
    else:
        argv = ["/bin/sh", "-c", command]
    try:
        done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return 0
    found = re.search(r"(\d+) passed", done.stdout)
    return int(found.group(1)) if found else 0


def scripted_judge() -> FunctionModel:
    """Passes an item when the answer holds the item's first word (scripted, no LLM)."""

    def policy(request: ModelRequest) -> str:
        prompt = request.prompt
        answer = prompt.split("Rubric items:")[0]
        listed = prompt.split("Rubric items:\n", 1)[1].split("\n\n")[0].splitlines()
        items = [line.split(". ", 1)[1] for line in listed if ". " in line]
        return json.dumps({"passed": [item.split()[0] in answer for item in items]})

    return FunctionModel(policy, name="judge-scripted")
