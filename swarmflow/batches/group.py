"""Batches run together: one pool of workers, one limit on runs at once, one order of starts.

`batch()` is a group of one, in task-list order. An experiment runs its arms as one group, in
an order of its own (`order`: which batch's which task starts next), so that no arm's runs
wait behind another's and the order in which they start is the one it recorded. Each batch
keeps its own folder, `results.jsonl`, lock, shared budget and progress; runs start strictly
in `order` (a run takes a free place before the next is considered), whatever executor runs
them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from swarmflow.batches.executor import Executor, open_executors
from swarmflow.batches.lock import batch_lock
from swarmflow.batches.names import names_in
from swarmflow.batches.outcome import BatchResult, Unfinished
from swarmflow.batches.progress import Progress
from swarmflow.batches.recovered import settled
from swarmflow.batches.results import ResultsFile, ResultsWriter, TaskResult
from swarmflow.batches.setup import Setup
from swarmflow.batches.tasks import Task
from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.core.secrets import Redactor, secret_values
from swarmflow.runner.wiring import model_secrets
from swarmflow.runtime.flow import Flow

RUNS = "runs"
ProgressHook = Callable[[Progress], None]
Order = Sequence[tuple[int, int]]
"""Which batch (its index) starts which task (its place in the batch's task list) next."""


@dataclass(frozen=True)
class BatchSpec:
    """One batch of a group: a flow over its tasks, into its own folder."""

    flow: Flow[..., object]
    tasks: list[Task]
    root: Path
    """The batch folder, absolute, with `runs/`."""
    options: dict[str, Any]
    """`run()`'s other options for every task (model, human, repo, ...)."""
    run_budget: Limits
    budget: Limits
    on_progress: ProgressHook | None = None
    retry_failed: bool = False
    fsync: bool = False
    on_line: Callable[[TaskResult], None] | None = None
    """Told each result line once it is written (an experiment grades the run then)."""


@dataclass(slots=True)
class _Batch:
    """What every task of one batch of the group shares while it runs."""

    spec: BatchSpec
    executor: Executor
    files: ResultsFile
    writer: ResultsWriter
    progress: Progress
    earlier: dict[str, TaskResult]
    finished: dict[str, TaskResult]

    def tell(self) -> None:
        if self.spec.on_progress is not None:
            self.spec.on_progress(self.progress)

    async def attempt(self, task: Task) -> TaskResult | Unfinished:
        """Run the task on the executor, counted as running meanwhile."""
        self.progress.running += 1
        self.tell()
        try:
            return await self.executor.run(task)
        finally:
            self.progress.running -= 1

    def record(self, outcome: TaskResult | Unfinished, *, earlier: bool) -> None:
        """Write a finished task's line (`earlier`: its run ended before this invocation, so
        its spend is not the batch ledger's); say why an unfinished one was left."""
        if isinstance(outcome, Unfinished):
            if outcome.why:
                self.progress.warnings.append(self.files.redactor.scrub(outcome.why))
            self.tell()
            return
        written = self.writer.write(outcome)
        self.finished[written.task] = written
        if self.spec.on_line is not None:
            self.spec.on_line(written)
        if earlier:
            self.progress.earlier_tokens += written.tokens
            self.progress.earlier_cost += written.cost
        if written.status == "ok":
            self.progress.ok += 1
        else:
            self.progress.failed += 1
        self.tell()

    def close(self) -> None:
        """The results file closed; the lines of a retry left unfinished put back."""
        self.writer.close()
        for kept in self.files.restore_set_aside():
            self.finished.setdefault(kept.task, kept)

    def result(self) -> BatchResult:
        stopped = self.executor.stopped
        ordered = [self.finished[t.id] for t in self.spec.tasks if t.id in self.finished]
        scrubbed = None if stopped is None else self.files.redactor.scrub(stopped)
        return BatchResult(self.spec.root, ordered, len(self.spec.tasks), self.progress, scrubbed)


@dataclass(frozen=True, slots=True)
class _Opened:
    """A batch whose folder is locked and read: what it has already and what it runs with."""

    spec: BatchSpec
    files: ResultsFile
    earlier: dict[str, TaskResult]
    setup: Setup

    def start(self, executor: Executor) -> _Batch:
        progress = _progress(self.spec.tasks, self.earlier, executor, self.files.warnings)
        return _Batch(
            self.spec,
            executor,
            self.files,
            self.files.writer(),
            progress,
            self.earlier,
            dict(self.earlier),
        )


async def run_batches(
    specs: Sequence[BatchSpec],
    *,
    concurrency: int,
    order: Order | None = None,
    on: str = "local",
    workers: int | None = None,
) -> list[BatchResult]:
    """Run every batch of `specs` through one pool, at most `concurrency` runs at once, their
    tasks started in `order` (by default each batch's tasks in turn, in task-list order)."""
    with contextlib.ExitStack() as locks:
        opened = [_open(spec, locks) for spec in specs]
        setups = [o.setup for o in opened]
        async with open_executors(on, setups, concurrency=concurrency, workers=workers) as pool:
            shared = [o.start(executor) for o, executor in zip(opened, pool, strict=True)]
            chosen = order if order is not None else _natural(specs)
            await _run_all(shared, chosen, concurrency)
    return [s.result() for s in shared]


def _natural(specs: Sequence[BatchSpec]) -> list[tuple[int, int]]:
    return [(index, place) for index, spec in enumerate(specs) for place in range(len(spec.tasks))]


def _open(spec: BatchSpec, locks: contextlib.ExitStack) -> _Opened:
    """Lock the batch's folder and read what earlier invocations left in it."""
    files = ResultsFile(spec.root, _redactor(spec.options.get("model")), fsync=spec.fsync)
    locks.enter_context(batch_lock(spec.root))
    files.restore_set_aside()  # a retry that was killed: its lines come back first
    earlier = files.read()
    spec = _named_as_written(spec)
    _check_same_tasks(spec.tasks, earlier, files)
    if spec.retry_failed:
        earlier = _set_failed_aside(files, spec.tasks, earlier)
    setup = Setup(spec.flow, spec.root / RUNS, spec.options, spec.run_budget, spec.budget)
    return _Opened(spec, files, earlier, setup)


def _named_as_written(spec: BatchSpec) -> BatchSpec:
    """`spec` with its tasks named as its folder names them (`names.names_in`: a folder of the
    older layout names each run by its place)."""
    names = names_in(spec.root, [t.id for t in spec.tasks])
    tasks = [Task(name, t.inputs) for name, t in zip(names, spec.tasks, strict=True)]
    return dataclasses.replace(spec, tasks=tasks)


def _redactor(model: Any) -> Redactor:
    """The runs' own secret policy: the environment's secret values and the model's."""
    return Redactor(secret_values(extra=model_secrets(model)))


async def _run_all(shared: list[_Batch], order: Order, concurrency: int) -> None:
    """Every task without a line, started in `order`, at most `concurrency` at once; the lines
    of a retry left unfinished are put back, however the batches end."""
    for batch in shared:
        batch.tell()
    try:
        limiter = anyio.CapacityLimiter(concurrency)
        async with anyio.create_task_group() as group:
            for index, at in order:
                batch = shared[index]
                task = batch.spec.tasks[at]
                if task.id not in batch.earlier:
                    place = await _place(limiter)
                    group.start_soon(_task, batch, limiter, place, task)
    finally:
        for batch in shared:
            batch.close()
    for batch in shared:
        await batch.executor.settle()
        batch.tell()


async def _place(limiter: anyio.CapacityLimiter) -> object:
    """A place under the limiter for the next task in the order, taken before the task
    starts (so starts keep the order), without yielding while one is free: the tasks that
    fit start together."""
    place = object()
    try:
        limiter.acquire_on_behalf_of_nowait(place)
    except anyio.WouldBlock:
        await limiter.acquire_on_behalf_of(place)
    return place


async def _task(batch: _Batch, limiter: anyio.CapacityLimiter, place: object, task: Task) -> None:
    try:
        if batch.executor.refused is not None:
            return  # left for a re-run with more budget
        run_dir = batch.spec.root / RUNS / task.id
        found = settled(task, run_dir, retry_failed=batch.spec.retry_failed)
        if found is not None:  # its run is live elsewhere, or it ended before its line
            batch.record(found, earlier=True)
            return
        batch.record(await batch.attempt(task), earlier=False)
    finally:
        limiter.release_on_behalf_of(place)


def _set_failed_aside(
    files: ResultsFile, tasks: list[Task], earlier: dict[str, TaskResult]
) -> dict[str, TaskResult]:
    """Set the failed tasks' lines aside, so that they run again; what is kept."""
    ids = {t.id for t in tasks}
    failed = {t for t, r in earlier.items() if r.status == "failed" and t in ids}
    if failed:
        files.set_aside(earlier, failed)
    return {t: r for t, r in earlier.items() if t not in failed}


def _check_same_tasks(
    tasks: list[Task], earlier: Mapping[str, TaskResult], files: ResultsFile
) -> None:
    """A re-run must be over the same task list: a changed input would be silently skipped.
    Inputs are compared as the lines record them (JSON, secrets scrubbed)."""
    for task in tasks:
        done = earlier.get(task.id)
        now = files.as_written(task.inputs)
        if done is not None and done.input != now:
            raise ConfigError(
                f"{files.path} records {task.id} with input {done.input!r}, but the task "
                f"list now has {now!r} there; use a new out= folder for a new task list"
            )


def _progress(
    tasks: list[Task], earlier: Mapping[str, TaskResult], executor: Executor, warnings: list[str]
) -> Progress:
    ids = {t.id for t in tasks}
    kept = [r for r in earlier.values() if r.task in ids]
    return Progress(
        total=len(tasks),
        ledger=executor.spending,
        skipped=len(kept),
        earlier_tokens=sum(r.tokens for r in kept),
        earlier_cost=sum(r.cost for r in kept),
        warnings=warnings,
    )
