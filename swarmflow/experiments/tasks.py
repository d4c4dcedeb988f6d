"""The task set: one JSON object a line, each a task's id, inputs and what its grader needs.

```json
{"id": "median", "inputs": {"issue": "..."}, "repo": "repos/median", "base": "HEAD",
 "test": "python -m pytest -q", "FAIL_TO_PASS": ["tests/test_stats.py::test_even"],
 "PASS_TO_PASS": ["tests/test_stats.py::test_odd"]}
{"id": "q1", "inputs": {"question": "..."}, "rubric": ["names the function", "..."]}
```

A relative `repo` is read from the task file's folder. Every mistake is one line naming the
file and the line.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarmflow.batches.files import BadLine, Line, json_value, lines
from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import open_regular
from swarmflow.experiments.layout import Layout

TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"


class ExperimentTask(BaseModel):
    """One task of the set."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    id: str = Field(pattern=TASK_ID)
    inputs: dict[str, object] = Field(default_factory=dict)
    """The flow's inputs (every arm's flow gets them, with the arm's own `inputs`)."""
    repo: str | None = None
    """A local git repository: each run works in a checkout of it at `base`."""
    base: str = "HEAD"
    """The commit the runs start from and the grader applies the product to."""
    test: str | None = None
    """The test command (`tests` grader), run in the checkout's root."""
    fail_to_pass: tuple[str, ...] = Field(default=(), alias="FAIL_TO_PASS")
    """Tests that must pass with the product (appended to the test command)."""
    pass_to_pass: tuple[str, ...] = Field(default=(), alias="PASS_TO_PASS")
    """Tests that passed before and must still pass (appended to the test command)."""
    test_files: tuple[str, ...] = ()
    """The files that hold the task's tests, restored from `base` before grading (none
    listed: the files its test ids name and the usual test patterns, `task_tests.py`)."""
    restore_tests: bool = True
    """False where editing the tests is the task: the product's test changes are graded."""
    debris: tuple[str, ...] = ()
    """More build-debris patterns (gitignore-style) left out of this task's products."""
    rubric: tuple[str, ...] = ()
    """Rubric items (`rubric` grader), each judged pass or fail."""
    data: dict[str, object] = Field(default_factory=dict)
    """Anything else a `function` grader wants."""
    tags: tuple[str, ...] = ()
    """Categories or buckets the report breaks results down by (`category:debugging`,
    `duration:short`): a tag `key:value` is a bucket of the breakdown named `key`."""


def read_task_set(path: Path) -> list[ExperimentTask]:
    """The tasks in `path`, with each relative `repo` made absolute from the file's folder.

    Raises:
        ConfigError: the file cannot be read, a line is no task (`PATH:LINE: why`), two tasks
            share an id, or the file holds none.
    """
    tasks: list[ExperimentTask] = []
    with open_regular(path, "the task set") as handle:
        for line in lines(handle):
            if line.data is not None and not line.data.strip():
                continue
            tasks.append(_task(path, line))
    if not tasks:
        raise ConfigError(f"{path}: the task set holds no task")
    ids = [t.id for t in tasks]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ConfigError(f"{path}: task ids must differ: {', '.join(twice)} twice")
    return tasks


def _task(path: Path, line: Line) -> ExperimentTask:
    where = f"{path}:{line.number}"
    try:
        value = json_value(line)
    except BadLine as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: a task is a JSON object, got {type(value).__name__}")
    try:
        task = ExperimentTask.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "task"
        raise ConfigError(f"{where}: {field}: {first['msg']}") from None
    if task.repo is not None and not Path(task.repo).is_absolute():
        task = task.model_copy(update={"repo": str((path.parent / task.repo).resolve())})
    return task


def write_graded_tasks(layout: Layout, tasks: list[ExperimentTask], bases: dict[str, str]) -> None:
    """Record the tasks as they are graded, each at its resolved base commit, so that
    `experiment grade` grades against the same bases (replaced whole, in one rename)."""
    lines = [t.model_copy(update={"base": bases.get(t.id, t.base)}) for t in tasks]
    data = "".join(t.model_dump_json(by_alias=True) + "\n" for t in lines)
    temporary = layout.graded_tasks.with_name(f".{layout.graded_tasks.name}.{os.getpid()}.tmp")
    temporary.write_text(data, encoding="utf-8")
    temporary.replace(layout.graded_tasks)


def item_counts(tasks: list[ExperimentTask]) -> dict[str, int]:
    """Task id -> the items it is graded by: its rubric items, or its `data.tests` (a whole
    number of tests a function grader's score is the passed share of)."""
    out: dict[str, int] = {}
    for t in tasks:
        tests = t.data.get("tests")
        if t.rubric:
            out[t.id] = len(t.rubric)
        elif isinstance(tests, int) and not isinstance(tests, bool) and tests > 0:
            out[t.id] = tests
    return out
