"""A task whose run ended before its result line was written: the line rebuilt from its log.

A batch killed between a run's end and its result line leaves a run directory whose log ends
with `run_finished`: the run's status, output, error, spend and time, scrubbed of secrets as
every event is. A re-run of the batch writes the task's line from that event instead of
running the task again (and paying for it twice) or recording it without its output.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarmflow.batches.outcome import Unfinished
from swarmflow.batches.results import TaskResult
from swarmflow.batches.tasks import Task
from swarmflow.core.errors import ConfigError
from swarmflow.durable.claims import live_pid
from swarmflow.record.events import RunFinished
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.jsonline import json_object
from swarmflow.record.lines import read_lines

KEPT = ("ok", "paused")
"""Ends a re-run always keeps; a failed one is kept unless it may run again (`kept`)."""
BUDGET_FAILURE = "BudgetExhausted:"
REBUILT = "rebuilt from the run's log: the run had ended, but results.jsonl held no line of it"


def recorded_end(run_dir: Path) -> tuple[RunFinished, bool] | None:
    """The `run_finished` event that ends the run's log, and whether the run was ever resumed;
    None when there is no log or the run did not end (interrupted, or resumed since).

    Raises:
        ConfigError: the log is not a regular file, or a line of it is not an event.
    """
    path = run_dir / EVENTS_FILE
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:  # `runs/<task>` is no directory, or cannot be read
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):  # a FIFO there would hold the read forever
        raise ConfigError(f"{path}: a run's log must be a regular file")
    tail = _Tail()
    read_lines(path, "an event", tail.take)
    if tail.last is None or tail.last.get("type") != "run_finished":
        return None
    try:
        return RunFinished.model_validate(tail.last), tail.resumed
    except ValidationError as exc:
        why = exc.errors(include_url=False, include_input=False)[0]["msg"]
        raise ConfigError(f"{path}: its last line is not a run_finished event ({why})") from None


@dataclass(slots=True)
class _Tail:
    """What `recorded_end` keeps of a log as it reads it: its last event, and any resume."""

    last: dict[str, Any] | None = None
    resumed: bool = False

    def take(self, raw: bytes) -> None:
        self.last = json_object(raw)
        self.resumed = self.resumed or self.last.get("type") == "run_resumed"


def kept(end: RunFinished, *, retry_failed: bool) -> bool:
    """Whether a run that ended so is the task's result, rather than a run to resume.

    A cancelled run is resumed. A failed one is resumed when the failures are retried, and
    when a budget stopped it: the batch's shared budget leaves such a run without a line so
    that a re-run with more budget resumes it (a per-task cap refuses it again at once,
    before any model call, and its line then says so).
    """
    if end.status in KEPT:
        return True
    failed_for_budget = (end.error or "").startswith(BUDGET_FAILURE)
    return end.status == "failed" and not retry_failed and not failed_for_budget


def rebuilt_result(task: Task, run_dir: Path, end: RunFinished, *, resumed: bool) -> TaskResult:
    """The task's result line, as the run's `run_finished` event records it."""
    return TaskResult(
        task=task.id,
        input=task.inputs,
        status=end.status,
        output=end.output,
        error=end.error,
        tokens=end.tokens,
        cost=end.cost,
        seconds=end.seconds,
        run_dir=str(run_dir),
        resumed=resumed,
        notes=[REBUILT],
    )


def live_elsewhere(task: Task, run_dir: Path) -> Unfinished | None:
    """A task whose run directory another live process holds (its `run.pid`): never run
    into it, nor read its log while that process writes it; a re-run takes it up."""
    pid = live_pid(run_dir)
    if pid is None:
        return None
    return Unfinished(
        task.id,
        f"{task.id}: its run directory {run_dir} is in use by process "
        f"{pid}; it was not run, and a re-run of the batch takes it up",
    )


def settled(task: Task, run_dir: Path, *, retry_failed: bool) -> TaskResult | Unfinished | None:
    """What the task's run directory settles before the batch runs it: a live run elsewhere,
    or a run that ended before its line was written (that line, rebuilt); None: run it."""
    busy = live_elsewhere(task, run_dir)
    if busy is not None:
        return busy
    try:
        found = recorded_end(run_dir)
    except ConfigError:
        return None  # the attempt records what is wrong with the log, as a resume would
    if found is None or not kept(found[0], retry_failed=retry_failed):
        return None
    return rebuilt_result(task, run_dir, found[0], resumed=found[1])
