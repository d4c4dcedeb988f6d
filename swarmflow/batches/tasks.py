"""The task list of a batch: one JSON object of flow inputs per line of a `.jsonl` file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.batches.files import MAX_DEPTH, BadLine, json_value, lines
from swarmflow.batches.names import own_name, run_names
from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import depth, open_regular


@dataclass(frozen=True, slots=True)
class Task:
    """One run of the batch: its id (also its run directory's name) and the flow's inputs.

    The id is made from the task's own name by `names.run_names` (its place in the list when
    it has none), never taken as it is, so it always names one folder inside `OUT/runs/`."""

    id: str
    inputs: dict[str, Any]


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


def tasks_from(
    rows: Iterable[tuple[int, Any]], *, where: str, names: Sequence[str] | None = None
) -> list[Task]:
    """Tasks from (line or position, value) pairs; every value must be an object of inputs.
    Each is named after `names` (one a task) or, without them, its own `id` or `name` input."""
    inputs: list[dict[str, Any]] = []
    for place, value in rows:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ConfigError(
                f"{where}:{place}: a task is a JSON object of the flow's inputs, "
                f"got {type(value).__name__}"
            )
        if depth(value) > MAX_DEPTH:  # what a results line could not record
            raise ConfigError(f"{where}:{place}: nested deeper than {MAX_DEPTH} levels")
        inputs.append(dict(value))
    if names is not None and len(names) != len(inputs):
        raise ValueError(f"{len(names)} names for {len(inputs)} tasks")
    wanted: list[str | None] = list(names) if names is not None else [own_name(i) for i in inputs]
    return [Task(name, i) for name, i in zip(run_names(wanted), inputs, strict=True)]


def as_tasks(
    inputs: str | Path | Iterable[Mapping[str, Any]], names: Sequence[str] | None = None
) -> list[Task]:
    """`batch()`'s `inputs`: a `.jsonl` path, or an iterable of input mappings; `names` (one
    a task) name their runs instead of the tasks' own `id` or `name` inputs."""
    if isinstance(inputs, str | Path):
        return read_tasks(inputs)
    return tasks_from(enumerate(inputs, start=1), where="inputs", names=names)
