"""The task list of a batch: one JSON object of flow inputs per line of a `.jsonl` file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Task:
    """One run of the batch: its id (also its run directory's name) and the flow's inputs."""

    id: str
    inputs: dict[str, Any]


def task_id(index: int) -> str:
    """The id of the task at `index` (from 0): `task-000001` for the first line."""
    return f"task-{index + 1:06d}"


def read_tasks(path: str | Path) -> list[Task]:
    """The tasks in a `.jsonl` file; blank lines are skipped, a bad line is named.

    Raises:
        ConfigError: the file cannot be read, or a line is not a JSON object.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the task list {source}: {exc}") from None
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}:{number}: not JSON: {exc.msg}") from None
    return tasks_from(rows, where=str(source))


def tasks_from(rows: Iterable[tuple[int, Any]], *, where: str) -> list[Task]:
    """Tasks from (line or position, value) pairs; every value must be an object of inputs."""
    tasks: list[Task] = []
    for index, (place, value) in enumerate(rows):
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ConfigError(
                f"{where}:{place}: a task is a JSON object of the flow's inputs, "
                f"got {type(value).__name__}"
            )
        tasks.append(Task(task_id(index), dict(value)))
    return tasks


def as_tasks(inputs: str | Path | Iterable[Mapping[str, Any]]) -> list[Task]:
    """`batch()`'s `inputs`: a `.jsonl` path, or an iterable of input mappings."""
    if isinstance(inputs, str | Path):
        return read_tasks(inputs)
    return tasks_from(enumerate(inputs, start=1), where="inputs")
