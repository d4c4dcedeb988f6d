"""The task list of a batch: one JSON object of flow inputs per line of a `.jsonl` file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.batches.files import MAX_DEPTH, BadLine, json_value, lines
from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import depth, open_regular


@dataclass(frozen=True, slots=True)
class Task:
    """One run of the batch: its id (also its run directory's name) and the flow's inputs.

    The id is the batch's own, made from the task's place in the list (`task_id`), never read
    from the task list, so it always names a folder inside `OUT/runs/`."""

    id: str
    inputs: dict[str, Any]


def task_id(index: int) -> str:
    """The id of the task at `index` (from 0): `task-000001` for the first line."""
    return f"task-{index + 1:06d}"


def read_tasks(path: str | Path) -> list[Task]:
    """The tasks in a `.jsonl` file; blank lines are skipped, a bad line is named.

    Raises:
        ConfigError: the file cannot be read or is not a regular file (a FIFO is refused,
            not waited on), or a line is not UTF-8, not JSON, too long, nested too deep, or
            not a JSON object (`PATH:LINE: why`).
    """
    source = Path(path)
    rows: list[tuple[int, Any]] = []
    with open_regular(source, "the task list") as handle:
        for line in lines(handle):
            if line.data is not None and not line.data.strip():
                continue
            try:
                rows.append((line.number, json_value(line)))
            except BadLine as exc:
                raise ConfigError(f"{source}:{line.number}: {exc}") from None
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
        if depth(value) > MAX_DEPTH:  # what a results line could not record
            raise ConfigError(f"{where}:{place}: nested deeper than {MAX_DEPTH} levels")
        tasks.append(Task(task_id(index), dict(value)))
    return tasks


def as_tasks(inputs: str | Path | Iterable[Mapping[str, Any]]) -> list[Task]:
    """`batch()`'s `inputs`: a `.jsonl` path, or an iterable of input mappings."""
    if isinstance(inputs, str | Path):
        return read_tasks(inputs)
    return tasks_from(enumerate(inputs, start=1), where="inputs")
