"""`batch`: run one flow over many tasks, with bounded concurrency, here or on a Ray cluster.

Every run's ledger is a child of one batch ledger: a shared budget is the batch ledger's limits,
enforced by the same reserve-before-call contract as a single run's (on Ray, the batch ledger
lives in a Ray actor; `executor.py` picks where the runs go). Each task's run directory
is `OUT/runs/<task id>`, so a batch that was stopped goes on where it was: finished tasks (a line
in `OUT/results.jsonl`) are skipped and interrupted runs are resumed from their journals. With
`retry_failed=True` the tasks that failed are run again too (resumed from their journals), and
their new lines replace the old ones (`results.py` says how no line is lost or doubled). A run
that ended before its line was written gets its line rebuilt from its log (`recovered.py`),
and a run directory another live process holds is left alone. One batch at a time uses an
`OUT` folder (`lock.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from swarmflow.batches.executor import Executor, open_executor, ray_address
from swarmflow.batches.lock import batch_lock
from swarmflow.batches.outcome import BatchResult, Unfinished
from swarmflow.batches.progress import Progress
from swarmflow.batches.recovered import settled
from swarmflow.batches.results import ResultsFile, ResultsWriter, TaskResult
from swarmflow.batches.setup import Setup
from swarmflow.batches.tasks import Task, as_tasks
from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.core.secrets import Redactor, secret_values
from swarmflow.runner.lifecycle import RUN_OPTIONS
from swarmflow.runner.wiring import model_secrets
from swarmflow.runtime.flow import Flow

RUNS = "runs"
OWN_OPTIONS = ("budget", "run_id", "runs_root", "resume", "raise_on_failure", "parent_ledger")
"""`run` options that `batch` sets itself for every task."""

ProgressHook = Callable[[Progress], None]


@dataclass(slots=True)
class _Batch:
    """What every task of one batch invocation shares."""

    executor: Executor
    files: ResultsFile
    writer: ResultsWriter
    progress: Progress
    on_progress: ProgressHook | None
    runs: Path
    retry_failed: bool
    finished: dict[str, TaskResult]

    def tell(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress)

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
        if earlier:
            self.progress.earlier_tokens += written.tokens
            self.progress.earlier_cost += written.cost
        if written.status == "ok":
            self.progress.ok += 1
        else:
            self.progress.failed += 1
        self.tell()


async def batch(
    flow: Flow[..., Any],
    inputs: str | Path | Iterable[Mapping[str, Any]],
    /,
    *,
    out: str | Path = "batch",
    concurrency: int = 8,
    budget: Limits | dict[str, float] | None = None,
    task_budget: Limits | dict[str, float] | None = None,
    on_progress: ProgressHook | None = None,
    fsync: bool = False,
    on: str = "local",
    workers: int | None = None,
    retry_failed: bool = False,
    **run_options: Any,
) -> BatchResult:
    """Run `flow` once per task of `inputs` (a `.jsonl` path or mappings of flow inputs).

    At most `concurrency` runs at once. `budget` is shared by every run of this invocation
    (a run that finds it spent stops, and no further task starts); `task_budget` caps each run.
    `out` holds `results.jsonl` and `runs/<task id>/`; running the same batch again skips the
    tasks with a result and resumes the rest. `on_progress` is called as tasks start and end.
    Other keywords (`model`, `human`, `repo`, `prices`, ...) go to every `run`.
    `retry_failed=True` runs the tasks whose line says `failed` again as well, each resumed
    from its journal (its finished calls are replayed, not paid); the tasks that ended ok or
    paused are kept as they are. One batch at a time may use `out`: it is locked while the
    batch runs. Every result line is scrubbed of the secrets the runs' logs are scrubbed of.

    `on="ray"` (or `"ray://HOST:PORT"`) runs each task on a Ray cluster instead, as one call of
    a Ray actor (`workers` of them, by default one per CPU of the cluster), with the shared
    budget held in a Ray actor (docs/ray.md); it needs `swarmflow[ray]`.

    Raises:
        ConfigError: a bad task list, `concurrency` under 1, an option `run` does not take,
            an `on` that is not "local", "ray" or "ray://HOST:PORT", an `out` folder another
            batch is using (the message names its process), a results file that is not a
            regular file.
    """
    if not isinstance(flow, Flow):
        raise ConfigError(f"batch() needs a @flow, got {flow!r}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    _check_options(run_options)
    ray_address(on)
    if workers is not None and workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    tasks = as_tasks(inputs)
    root = _prepare(out)
    files = ResultsFile(root, _redactor(run_options.get("model")), fsync=fsync)
    with batch_lock(root):
        files.restore_set_aside()  # a retry that was killed: its lines come back first
        earlier = files.read()
        _check_same_tasks(tasks, earlier, files)
        if retry_failed:
            earlier = _set_failed_aside(files, tasks, earlier)
        options = _run_options(run_options, task_budget)
        setup = Setup(flow, root / RUNS, options, Limits.coerce(budget), concurrency)
        async with open_executor(on, setup, workers=workers) as executor:
            progress = _progress(tasks, earlier, executor, files.warnings)
            shared = _Batch(executor, files, files.writer(), progress, on_progress, setup.runs,
                            retry_failed, dict(earlier))  # fmt: skip
            await _run_all(shared, tasks, earlier, concurrency)
            stopped = executor.stopped
    finished = shared.finished
    ordered = [finished[t.id] for t in tasks if t.id in finished]
    scrubbed = None if stopped is None else files.redactor.scrub(stopped)
    return BatchResult(root, ordered, len(tasks), progress, scrubbed)


def _redactor(model: Any) -> Redactor:
    """The runs' own secret policy: the environment's secret values and the model's."""
    return Redactor(secret_values(extra=model_secrets(model)))


async def _run_all(
    shared: _Batch, tasks: list[Task], earlier: Mapping[str, TaskResult], concurrency: int
) -> None:
    """Every task without a line, at most `concurrency` at once; the lines of a retry left
    unfinished are put back, however the batch ends."""
    shared.tell()
    try:
        limiter = anyio.CapacityLimiter(concurrency)
        async with anyio.create_task_group() as group:
            for task in tasks:
                if task.id not in earlier:
                    group.start_soon(_task, shared, limiter, task)
    finally:
        shared.writer.close()
        for kept in shared.files.restore_set_aside():  # a retry left unfinished
            shared.finished.setdefault(kept.task, kept)
    await shared.executor.settle()
    shared.tell()


def _set_failed_aside(
    files: ResultsFile, tasks: list[Task], earlier: dict[str, TaskResult]
) -> dict[str, TaskResult]:
    """Set the failed tasks' lines aside, so that they run again; what is kept."""
    ids = {t.id for t in tasks}
    failed = {t for t, r in earlier.items() if r.status == "failed" and t in ids}
    if failed:
        files.set_aside(earlier, failed)
    return {t: r for t, r in earlier.items() if t not in failed}


def _prepare(out: str | Path) -> Path:
    """The batch folder, made absolute (runs must not depend on the cwd) and with `runs/`."""
    root = Path(out).resolve()
    (root / RUNS).mkdir(parents=True, exist_ok=True)
    return root


def _run_options(
    run_options: Mapping[str, Any], task_budget: Limits | dict[str, float] | None
) -> dict[str, Any]:
    """What every task's `run()` gets besides its own run directory and ledger."""
    options = dict(run_options, budget=Limits.coerce(task_budget))
    if options.get("repo") is not None:  # worktrees must not depend on a worker's cwd
        options["repo"] = Path(options["repo"]).resolve()
    return options


def _check_options(options: Mapping[str, Any]) -> None:
    own = sorted(set(options) & set(OWN_OPTIONS))
    if own:
        raise ConfigError(
            f"batch() sets {', '.join(own)} itself for each task; use budget=/task_budget= "
            "for budgets and out= for where the runs go"
        )
    unknown = sorted(set(options) - set(RUN_OPTIONS))
    if unknown:
        raise ConfigError(
            f"batch() got unknown option(s) {', '.join(unknown)}; it passes on only run()'s "
            f"options: {', '.join(o for o in RUN_OPTIONS if o not in OWN_OPTIONS)}"
        )


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


async def _task(shared: _Batch, limiter: anyio.CapacityLimiter, task: Task) -> None:
    async with limiter:
        if shared.executor.refused is not None:
            return  # left for a re-run with more budget
        found = settled(task, shared.runs / task.id, retry_failed=shared.retry_failed)
        if found is not None:  # its run is live elsewhere, or it ended before its line
            shared.record(found, earlier=True)
            return
        shared.record(await shared.attempt(task), earlier=False)
