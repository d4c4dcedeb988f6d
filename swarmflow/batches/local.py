"""`batch`: run one flow over many tasks, with bounded concurrency, here or on a Ray cluster.

Every run's ledger is a child of one batch ledger: a shared budget is the batch ledger's limits,
enforced by the same reserve-before-call contract as a single run's (on Ray, the batch ledger
lives in a Ray actor; `executor.py` picks where the runs go). Each task's run directory
is `OUT/runs/<task id>`, so a batch that was stopped goes on where it was: finished tasks (a line
in `OUT/results.jsonl`) are skipped and interrupted runs are resumed from their journals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from swarmflow.batches.executor import Executor, open_executor, ray_address
from swarmflow.batches.outcome import BatchResult
from swarmflow.batches.progress import Progress
from swarmflow.batches.results import RESULTS, ResultsWriter, TaskResult, read_results
from swarmflow.batches.setup import Setup
from swarmflow.batches.tasks import Task, as_tasks
from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.runner.lifecycle import RUN_OPTIONS
from swarmflow.runtime.flow import Flow

RUNS = "runs"
OWN_OPTIONS = ("budget", "run_id", "runs_root", "resume", "raise_on_failure", "parent_ledger")
"""`run` options that `batch` sets itself for every task."""

ProgressHook = Callable[[Progress], None]


@dataclass(slots=True)
class _Batch:
    """What every task of one batch invocation shares."""

    executor: Executor
    writer: ResultsWriter
    progress: Progress
    on_progress: ProgressHook | None

    def tell(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress)


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
    **run_options: Any,
) -> BatchResult:
    """Run `flow` once per task of `inputs` (a `.jsonl` path or mappings of flow inputs).

    At most `concurrency` runs at once. `budget` is shared by every run of this invocation
    (a run that finds it spent stops, and no further task starts); `task_budget` caps each run.
    `out` holds `results.jsonl` and `runs/<task id>/`; running the same batch again skips the
    tasks with a result and resumes the rest. `on_progress` is called as tasks start and end.
    Other keywords (`model`, `human`, `repo`, `prices`, ...) go to every `run`.

    `on="ray"` (or `"ray://HOST:PORT"`) runs each task on a Ray cluster instead, as one call of
    a Ray actor (`workers` of them, by default one per CPU of the cluster), with the shared
    budget held in a Ray actor (docs/ray.md); it needs `swarmflow[ray]`.

    Raises:
        ConfigError: a bad task list, `concurrency` under 1, an option `run` does not take,
            an `on` that is not "local", "ray" or "ray://HOST:PORT".
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
    earlier = read_results(root / RESULTS)
    _check_same_tasks(tasks, earlier, root)
    options = _run_options(run_options, task_budget)
    setup = Setup(flow, root / RUNS, options, Limits.coerce(budget), concurrency)
    finished: dict[str, TaskResult] = dict(earlier)
    async with open_executor(on, setup, workers=workers) as executor:
        progress = _progress(tasks, earlier, executor)
        writer = ResultsWriter(root / RESULTS, fsync=fsync)
        shared = _Batch(executor, writer, progress, on_progress)
        shared.tell()
        try:
            limiter = anyio.CapacityLimiter(concurrency)
            async with anyio.create_task_group() as group:
                for task in tasks:
                    if task.id not in earlier:
                        group.start_soon(_task, shared, limiter, task, finished)
        finally:
            writer.close()
        shared.tell()
        stopped = executor.stopped
    ordered = [finished[t.id] for t in tasks if t.id in finished]
    return BatchResult(root, ordered, len(tasks), progress, stopped)


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


def _check_same_tasks(tasks: list[Task], earlier: Mapping[str, TaskResult], root: Path) -> None:
    """A re-run must be over the same task list: a changed input would be silently skipped."""
    for task in tasks:
        done = earlier.get(task.id)
        if done is not None and done.input != task.inputs:
            raise ConfigError(
                f"{root / RESULTS} records {task.id} with input {done.input!r}, but the task "
                f"list now has {task.inputs!r} there; use a new out= folder for a new task list"
            )


def _progress(tasks: list[Task], earlier: Mapping[str, TaskResult], executor: Executor) -> Progress:
    ids = {t.id for t in tasks}
    kept = [r for r in earlier.values() if r.task in ids]
    return Progress(
        total=len(tasks),
        ledger=executor.spending,
        skipped=len(kept),
        earlier_tokens=sum(r.tokens for r in kept),
        earlier_cost=sum(r.cost for r in kept),
    )


async def _task(
    shared: _Batch, limiter: anyio.CapacityLimiter, task: Task, finished: dict[str, TaskResult]
) -> None:
    async with limiter:
        if shared.executor.refused is not None:
            return  # left for a re-run with more budget
        shared.progress.running += 1
        shared.tell()
        try:
            result = await shared.executor.run(task)
        finally:
            shared.progress.running -= 1
        if result is None:
            shared.tell()
            return
        shared.writer.write(result)
        finished[task.id] = result
        if result.status == "ok":
            shared.progress.ok += 1
        else:
            shared.progress.failed += 1
        shared.tell()
