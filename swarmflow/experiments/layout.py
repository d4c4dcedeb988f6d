"""Where an experiment's files go, and the record of what was declared (`experiment.json`).

```
OUT/experiment.json            the declaration and the runs' order, written by the first run
OUT/arms/<arm>/                one batch per arm: results.jsonl, runs/<task>-r1/ ...
OUT/checkouts/<arm>/<task>/r1  each run's own checkout of its task's repository
OUT/grades.jsonl               one line per graded run, appended once (each names its grader)
OUT/graded-tasks.jsonl         the tasks as graded (base commits resolved), for `experiment grade`
OUT/events.jsonl               the experiment's own events (grading outside the sandbox)
OUT/judge/                     a rubric judge's own runs, apart from the arms'
OUT/rows.csv                   one row per finished run (pandas / DuckDB read it in a line)
```

An arm's batch runs task by task, repeat by repeat: run `i` (from 0) is task `i // repeats`,
repeat `i % repeats + 1`. Each run's folder is named after its task and repeat, `<task>-r1`,
made safe and unique by the batch's rule (`batches.names`: `median-r1`, `Median-r1-2`); an
arm folder written before runs were named so keeps its `task-000001`, ... (`RunDirs`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarmflow.batches.names import names_in, run_names
from swarmflow.core import reading
from swarmflow.core.errors import ConfigError

MANIFEST = "experiment.json"
GRADES = "grades.jsonl"
GRADED_TASKS = "graded-tasks.jsonl"
ROWS = "rows.csv"
SCHEMA = 1


class ArmRecord(BaseModel):
    """An arm as the report needs it."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    reference: bool = False
    controller: str = "single"
    delegation: str = "none"
    tools: dict[str, list[str]] | None = None
    context: list[str] | None = None
    note: str = ""
    flow: str = ""
    limits: dict[str, float] = Field(default_factory=dict)
    debris: list[str] = Field(default_factory=list)
    """The arm's own build-debris patterns."""
    factors: dict[str, object] = Field(default_factory=dict)
    """The factors the arm set (`swarmflow.experiments.factors.factor_record`)."""
    best_of: dict[str, Any] | None = None
    """`{"k": ..., "rule": ...}` for a best-of-k arm (`swarmflow.experiments.bestof`)."""


class Manifest(BaseModel):
    """What `experiment.json` holds: the declaration, as recorded by its first run."""

    model_config = ConfigDict(extra="ignore")

    schema_: int = Field(alias="schema")
    name: str
    arms: list[ArmRecord]
    tasks: list[str]
    """The task ids, in the task set's order."""
    repeats: int = Field(ge=1, le=1000)
    grader: str
    grader_spec: dict[str, object] | None = None
    """The `tests` grader's declaration, which `experiment grade` rebuilds it from."""
    rubric: dict[str, int] = Field(default_factory=dict)
    """Task id -> its rubric items, where the grader is a rubric."""
    seed: int | None = None
    """The seed of the order in which the runs start (None: recorded before there was one)."""
    order: list[str] = Field(default_factory=list)
    """Every run (`arm/task/rN`), in the order the runs start."""
    tags: dict[str, list[str]] = Field(default_factory=dict)
    """Task id -> its tags, where it has some (the per-category breakdown)."""
    ladder: list[str] = Field(default_factory=list)
    """Arms in the order of a ladder: each step is compared with the one before it."""
    items: dict[str, int] = Field(default_factory=dict)
    """Task id -> the items it is graded by, where it is graded by a count (its rubric
    items, or its `data.tests`): the weighted and macro rates weigh its score by them."""

    def runs(self) -> list[tuple[ArmRecord, int, RunKey]]:
        """Every run: its arm, its batch index and its key."""
        return [
            (arm, run_index(t, r, self.repeats), RunKey(arm.name, task, r))
            for arm in self.arms
            for t, task in enumerate(self.tasks)
            for r in range(1, self.repeats + 1)
        ]


@dataclass(frozen=True, slots=True)
class RunKey:
    """One run of the experiment: an arm, a task and a repeat (from 1)."""

    arm: str
    task: str
    repeat: int

    @property
    def text(self) -> str:
        return f"{self.arm}/{self.task}/r{self.repeat}"


@dataclass(frozen=True, slots=True)
class Layout:
    """The paths of one experiment directory."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def grades(self) -> Path:
        return self.root / GRADES

    @property
    def rows(self) -> Path:
        return self.root / ROWS

    @property
    def graded_tasks(self) -> Path:
        return self.root / GRADED_TASKS

    def arm(self, arm: str) -> Path:
        return self.root / "arms" / arm

    def checkout(self, key: RunKey) -> Path:
        return self.root / "checkouts" / key.arm / key.task / f"r{key.repeat}"

    def grading(self, key: RunKey) -> Path:
        return self.root / "grading" / key.arm / key.task / f"r{key.repeat}"

    def judge(self) -> Path:
        return self.root / "judge"


def run_name(task: str, repeat: int) -> str:
    """The name a run of `task` wants for its folder (`batches.names` makes it safe)."""
    return f"{task}-r{repeat}"


def batch_names(tasks: Sequence[str], repeats: int) -> list[str]:
    """The names of an arm's runs, in its batch's order (task by task, repeat by repeat)."""
    return run_names([run_name(t, r) for t in tasks for r in range(1, repeats + 1)])


@dataclass
class RunDirs:
    """Where each run of an experiment is: in its arm's `runs/`, named as the arm's batch
    folder names it (`batches.names.names_in`; each arm's folder is looked at once)."""

    layout: Layout
    tasks: Sequence[str]
    repeats: int
    _arms: dict[str, list[str]] = field(default_factory=dict)

    @functools.cached_property
    def _places(self) -> dict[str, int]:
        return {task: place for place, task in enumerate(self.tasks)}

    @classmethod
    def of(cls, layout: Layout, manifest: Manifest) -> RunDirs:
        return cls(layout, manifest.tasks, manifest.repeats)

    def names(self, arm: str) -> list[str]:
        """The names of the arm's (or a best-of candidate's) runs, in its batch's order."""
        if arm not in self._arms:
            made = batch_names(self.tasks, self.repeats)
            self._arms[arm] = names_in(self.layout.arm(arm), made)
        return self._arms[arm]

    def __call__(self, key: RunKey) -> Path:
        """The run directory of `key`."""
        index = run_index(self._places[key.task], key.repeat, self.repeats)
        return self.layout.arm(key.arm) / "runs" / self.names(key.arm)[index]


def run_index(task_index: int, repeat: int, repeats: int) -> int:
    """The batch index of a task's repeat (`repeat` from 1)."""
    return task_index * repeats + repeat - 1


def write_manifest(layout: Layout, manifest: dict[str, object]) -> None:
    """Record the declaration the first time; a later run must declare the same experiment."""
    layout.root.mkdir(parents=True, exist_ok=True)
    if layout.manifest.exists():
        before = read_manifest(layout.root).model_dump(by_alias=True)
        fields = ("name", "arms", "tasks", "repeats", "seed")
        for field in fields if before.get("seed") is not None else fields[:-1]:
            if _shape(before.get(field)) != _shape(manifest.get(field)):
                raise ConfigError(
                    f"{layout.manifest} records another experiment ({field} differ); "
                    "use a new --out folder for a changed declaration"
                )
        return
    temporary = layout.manifest.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"schema": SCHEMA, **manifest}, indent=2), encoding="utf-8")
    temporary.replace(layout.manifest)


def _shape(value: object) -> object:
    """What must not change between runs of one experiment directory: names and ids."""
    if isinstance(value, list):
        return [v.get("name", v.get("id")) if isinstance(v, dict) else v for v in value]
    return value


def read_manifest(root: Path) -> Manifest:
    """The declaration recorded in `root`; `ConfigError` when there is none to read."""
    path = root / MANIFEST
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder: not an experiment directory")
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{root} holds no {MANIFEST}: not an experiment directory")
    found = reading.read_json(path, "an experiment record")
    if not isinstance(found, dict) or found.get("schema") != SCHEMA:
        raise ConfigError(f"{path} is not an experiment record of this swarmflow")
    try:
        return Manifest.model_validate(found)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
