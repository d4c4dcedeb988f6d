"""`results.jsonl`: one line per finished task, written whole the moment the task ends.

Each line is written with one unbuffered `write(2)`, so a batch killed at any moment leaves
whole lines (a line torn by a power cut is cut off when the batch is run again).

Every line is scrubbed of secrets before it is written, by the policy the runs' event logs
follow (`core.secrets`: the environment's secret values and the model's own), in its output,
its error and its input alike. A line is also kept readable: an output too large for a line
(`files.MAX_LINE`) or nested too deep (`files.MAX_DEPTH`) is left out of it, with a note
saying where it is (the `run_finished` event of the task's run).

Reading the file back, each line is checked against `ResultLine`. A line that is not a task
result (not JSON, not UTF-8, too long, nested too deep, a field of the wrong type, a task id
that could not name a run folder: `names.NAME_PATTERN`) is skipped with a warning naming the
file and the line, so its task counts as not done: a re-run rebuilds its line from its run's
log, or runs it. (A retry, which replaces the file whole, leaves such lines out of it.)

Retrying the failed tasks (`batch(..., retry_failed=True)`) keeps the file at one line per
task: their lines are first set aside in `results.retrying.jsonl` and taken out of
`results.jsonl` (each file replaced whole), a retried task appends its new line as any task
does, and when the batch ends, or at the start of the next one if it was killed, a set-aside
line comes back for each task that still has none. At every moment each task's line is in
`results.jsonl` or in the set-aside file, never lost, and never twice in `results.jsonl`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_jsonable_python

from swarmflow.batches.files import (
    MAX_DEPTH,
    MAX_LINE,
    BadLine,
    Line,
    json_value,
    lines,
)
from swarmflow.batches.names import NAME_PATTERN
from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import depth, open_regular
from swarmflow.core.secrets import Redactor
from swarmflow.record.lines import LineWriter

RESULTS = "results.jsonl"
SET_ASIDE = "results.retrying.jsonl"
"""The lines of the tasks being retried, until each has a new line in `results.jsonl`."""
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


Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ResultLine(BaseModel):
    """One line of `results.jsonl` as it is read back: every field of its type, no other."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    task: Annotated[str, Field(pattern=NAME_PATTERN)]
    """The task's id, its run folder's name (`names.py`)."""
    input: dict[str, Any]
    status: Literal["ok", "failed", "paused", "cancelled"]
    output: Any = None
    error: str | None = None
    tokens: Annotated[int, Field(ge=0)] = 0
    cost: Amount = 0.0
    seconds: Amount = 0.0
    run_dir: str = ""
    resumed: bool = False
    notes: list[str] = []

    def result(self) -> TaskResult:
        return TaskResult(**{**self.__dict__, "notes": list(self.notes)})


@dataclass(slots=True)
class ResultsFile:
    """`OUT/results.jsonl` and its set-aside file, read and written with one secret policy.

    `warnings` gathers a line for each line read back that is not a task result.
    """

    root: Path
    redactor: Redactor
    fsync: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.root / RESULTS

    def read(self, path: Path | None = None) -> dict[str, TaskResult]:
        """The finished tasks recorded in `path` (default `results.jsonl`), by task id; the
        last line for a task wins, a torn last line is cut off, a bad line is skipped.

        Raises:
            ConfigError: the file is not a regular file (a FIFO is refused, not waited on).
        """
        path = path or self.path
        if not path.exists():
            return {}
        found: dict[str, TaskResult] = {}
        for result in self._results(path):
            if result.status in FINISHED:
                found[result.task] = result
        return found

    def _results(self, path: Path) -> list[TaskResult]:
        read: list[TaskResult] = []
        with open_regular(path, "the results file") as handle:
            for line in lines(handle):
                if not line.ended:  # torn by a crash mid-write: cut off before anything is added
                    os.truncate(path, line.start)
                    break
                if line.data is not None and not line.data.strip():
                    continue
                try:
                    read.append(_parsed(line))
                except BadLine as exc:
                    self._warn(
                        f"{path}:{line.number}: not a task result ({exc}); skipped, so "
                        "its task counts as not done"
                    )
        return read

    def _warn(self, warning: str) -> None:
        if warning not in self.warnings:  # the file is read more than once by a retry
            self.warnings.append(warning)

    def writer(self) -> ResultsWriter:
        return ResultsWriter(self.path, self.redactor, fsync=self.fsync)

    def as_written(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """A task's inputs as its line records them (JSON, secrets scrubbed)."""
        return _written_input(inputs, self.redactor)

    def set_aside(self, results: Mapping[str, TaskResult], retried: set[str]) -> None:
        """Move the lines of the `retried` tasks out of `results.jsonl` (`results` is what it
        holds) into the set-aside file, so that their new lines replace them."""
        moved = [r for r in results.values() if r.task in retried]
        # First: until the next line is written, both files hold them.
        self._write_whole(self.root / SET_ASIDE, moved)
        self._write_whole(self.path, [r for r in results.values() if r.task not in retried])

    def restore_set_aside(self) -> list[TaskResult]:
        """Put back the set-aside line of each task that has no line in `results.jsonl` (a
        retry that did not finish it), then remove the set-aside file; the lines put back."""
        aside = self.root / SET_ASIDE
        if not aside.exists():
            return []
        present = self.read()
        back = [r for r in self.read(aside).values() if r.task not in present]
        if back:
            writer = self.writer()
            try:
                for result in back:
                    writer.write(result)
            finally:
                writer.close()
        aside.unlink()
        return back

    def _write_whole(self, path: Path, results: Iterable[TaskResult]) -> None:
        """Replace `path` with these lines: a reader, or a kill, sees the old file or the new."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as handle:
            handle.write(b"".join(encode(r, self.redactor)[0] for r in results))
            if self.fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)


def _parsed(line: Line) -> TaskResult:
    try:
        # The line's object holds the input and the output: one level more than either.
        return ResultLine.model_validate(json_value(line, MAX_DEPTH + 1)).result()
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BadLine(f"{where}: {first['msg']}" if where else first["msg"]) from None


class ResultsWriter:
    """Appends result lines to `results.jsonl` with the one line writer (`record.lines`):
    each scrubbed, and written with one unbuffered write (synced with `fsync`)."""

    def __init__(self, path: Path, redactor: Redactor, *, fsync: bool = False) -> None:
        self.path = path
        self.redactor = redactor
        try:
            self._lines = LineWriter(path, fsync=fsync, what="the results file")
        except OSError as exc:  # a FIFO without a reader, a folder there, no room
            raise ConfigError(f"cannot write the results file {path}: {exc.strerror}") from None

    def write(self, result: TaskResult) -> TaskResult:
        """Append `result`'s line; the result as the line records it (secrets scrubbed)."""
        line, written = encode(result, self.redactor)
        self._lines.hold(line.removesuffix(b"\n"))
        self._lines.flush()
        return written

    def close(self) -> None:
        self._lines.close()


def encode(result: TaskResult, redactor: Redactor) -> tuple[bytes, TaskResult]:
    """`result`'s line (secrets scrubbed, always readable back) and the result it records."""
    fields = asdict(result)
    fields.update(
        input=_written_input(result.input, redactor),
        error=None if result.error is None else redactor.scrub(result.error),
        notes=[redactor.scrub(note) for note in result.notes],
        tokens=max(0, int(result.tokens)),
        cost=_finite(result.cost),
        seconds=_finite(result.seconds),
    )
    output = jsonable(result.output)
    line, unfit = _line(fields, output, redactor)
    if unfit is not None:
        output = None
        fields["notes"] = [
            *fields["notes"],
            f"the output ({unfit}) does not fit a results "
            f"line (at most {MAX_LINE} bytes, {MAX_DEPTH} levels deep); it is "
            "in the run_finished event of the task's run",
        ]
        line, _ = _line(fields, None, redactor)
    return line, TaskResult(**fields)


def _line(fields: dict[str, Any], output: Any, redactor: Redactor) -> tuple[bytes, str | None]:
    """The JSON line of `fields` with `output` scrubbed (set in `fields`), or why that output
    does not fit a line."""
    if depth(output) > MAX_DEPTH:
        return b"", f"nested more than {MAX_DEPTH} levels deep"
    fields["output"] = _scrub(output, redactor)
    line = (json.dumps(fields) + "\n").encode()
    return line, None if len(line) <= MAX_LINE else f"{len(line)} bytes of JSON"


def _written_input(inputs: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """A task's inputs as its line records them: JSON, secrets scrubbed (the task list holds
    them at most `MAX_DEPTH` deep; deeper mappings given from Python are named, not held)."""
    plain = jsonable(dict(inputs))
    if not isinstance(plain, dict) or depth(plain) > MAX_DEPTH:
        return {"<inputs>": f"not recorded: not JSON of at most {MAX_DEPTH} levels"}
    scrubbed: dict[str, Any] = _scrub(plain, redactor)
    return scrubbed


def jsonable(value: Any) -> Any:
    """JSON-ready data as the run's own log records it (unknown objects as their `str`)."""
    try:
        return to_jsonable_python(value, fallback=str, inf_nan_mode="null")
    except (ValueError, RecursionError) as exc:  # a cycle, or nested past any reader
        return f"<not JSON: {' '.join(str(exc).split())[:200]}>"


def _scrub(value: Any, redactor: Redactor) -> Any:
    """`value` with every string in it (keys included) scrubbed of secrets."""
    if not redactor:
        return value
    if isinstance(value, str):
        return redactor.scrub(value)
    if isinstance(value, list):
        return [_scrub(item, redactor) for item in value]
    if isinstance(value, dict):
        return {redactor.scrub(str(k)): _scrub(v, redactor) for k, v in value.items()}
    return value


def _finite(amount: float) -> float:
    value = float(amount)
    return value if math.isfinite(value) and value >= 0 else 0.0
