"""`results.jsonl`: one line per finished task, written whole the moment the task ends.

Each line is written with one unbuffered `write(2)`, so a batch killed at any moment leaves
whole lines (a line torn by a power cut is cut off when the batch is run again).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from swarmflow.core.errors import ConfigError

RESULTS = "results.jsonl"
FINISHED = ("ok", "failed", "paused")
"""Statuses of a finished task: a re-run of the batch skips it."""


@dataclass(slots=True)
class TaskResult:
    """How one task ended."""

    task: str
    input: dict[str, Any]
    status: str
    output: Any = None
    error: str | None = None
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    run_dir: str = ""
    resumed: bool = False
    notes: list[str] = field(default_factory=list)

    def line(self) -> bytes:
        return (json.dumps(asdict(self), default=_text) + "\n").encode()


def _text(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else repr(value)


def read_results(path: Path) -> dict[str, TaskResult]:
    """The finished tasks recorded in `path`, by task id (the last line for a task wins).

    Raises:
        ConfigError: a whole line that is not a result (a torn last line is dropped instead).
    """
    if not path.exists():
        return {}
    found: dict[str, TaskResult] = {}
    for number, line in enumerate(_whole_lines(path), start=1):
        try:
            result = TaskResult(**json.loads(line))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ConfigError(f"{path}:{number}: not a task result: {exc}") from None
        if result.status in FINISHED:
            found[result.task] = result
    return found


def _whole_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):  # a torn last line: cut it off before anything is appended
        with path.open("r+b") as handle:
            handle.truncate(len(whole))
    return [line for line in whole.decode("utf-8").splitlines() if line.strip()]


class ResultsWriter:
    """Appends result lines to `results.jsonl`, each with one unbuffered write."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        self._handle = path.open("ab", buffering=0)

    def write(self, result: TaskResult) -> None:
        self._handle.write(result.line())
        if self._fsync:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()
