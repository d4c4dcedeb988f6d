"""Which files hold a task's tests: the ones the `tests` grader restores from the base.

A product is graded by the task's tests as its base had them, never as the product left them
(SWE-bench's rule): a product that rewrote the failing test into `pass`, or a `conftest.py`
that skips everything, would otherwise grade itself. The files are:

- the files the task's `FAIL_TO_PASS` / `PASS_TO_PASS` ids name (the part before `::`);
- the task's `test_files`, when it lists them (then only these and the listed ids' files);
- otherwise, by default, every file matching `TEST_PATTERNS` (gitignore-style, as
  `workspaces.debris` reads them).

`TestsGrader(restore_tests=False)`, or a task's `"restore_tests": false`, turns the rule off
for tasks where editing the tests is the job.
"""

from __future__ import annotations

from collections.abc import Iterable

from swarmflow.experiments.graders import TestsGrader
from swarmflow.experiments.tasks import ExperimentTask
from swarmflow.workspaces.debris import is_debris

TEST_PATTERNS: tuple[str, ...] = (
    "tests/",
    "test/",
    "testing/",
    "__tests__/",
    "test_*.py",
    "*_test.py",
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "*_test.go",
    "*.test.js",
    "*.test.ts",
    "*.test.jsx",
    "*.test.tsx",
    "*.spec.js",
    "*.spec.ts",
)
"""The usual places of tests: test folders, test modules, pytest's configuration files."""


def restores_tests(grader: TestsGrader, task: ExperimentTask) -> bool:
    """Whether the rule holds for this task: both the grader and the task leave it on."""
    return grader.restore_tests and task.restore_tests


def tests_among(task: ExperimentTask, paths: Iterable[str]) -> list[str]:
    """The paths of `paths` (what a product changes) that hold the task's tests."""
    named = {test.split("::", 1)[0] for test in (*task.fail_to_pass, *task.pass_to_pass)}
    named.update(task.test_files)
    named = {name.strip("/") for name in named if name.strip("/")}
    if task.test_files:
        return [p for p in paths if p in named]
    return [p for p in paths if p in named or is_debris(p, TEST_PATTERNS)]
