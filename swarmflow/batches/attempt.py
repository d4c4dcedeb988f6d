"""One attempt at one task: run (or resume) its flow and turn the run into its result line.

The same code runs in the batch's own process (the local executor) and on a Ray worker, so a
task's run directory, resume rule and result line do not depend on where it ran.
"""

from __future__ import annotations

from pathlib import Path

from swarmflow.batches.ledger import BatchLedger
from swarmflow.batches.outcome import Unfinished, budget_stopped, task_result
from swarmflow.batches.recovered import KEPT, live_elsewhere, rebuilt_result, recorded_end
from swarmflow.batches.results import TaskResult
from swarmflow.batches.setup import Setup
from swarmflow.batches.tasks import Task
from swarmflow.core.errors import ConfigError
from swarmflow.durable.run_log import has_log
from swarmflow.runner.lifecycle import run


async def run_task(setup: Setup, task: Task, ledger: BatchLedger) -> TaskResult | Unfinished:
    """The task's result, or `Unfinished` when it stays without one for a re-run: the shared
    budget stopped it, or another live process holds its run directory.

    The run directory is `runs/<task id>`: a run that ended ok (or paused) is not run again
    (its line is rebuilt from its log), one that was interrupted or is being retried is
    resumed from its journal, and otherwise the run starts there.
    """
    runs = setup.runs
    run_dir = runs / task.id
    busy = live_elsewhere(task, run_dir)
    if busy is not None:
        return busy
    try:
        found = recorded_end(run_dir)
    except ConfigError as exc:  # a log that cannot be resumed fails its task alone
        return _failed(task, run_dir, exc, resumed=False)
    if found is not None and found[0].status in KEPT:  # it ended before its line was written
        return rebuilt_result(task, run_dir, found[0], resumed=found[1])
    resume = has_log(run_dir)
    chosen = dict(
        setup.options,
        budget=setup.run_budget,
        runs_root=runs,
        run_id=task.id,
        parent_ledger=ledger,
        raise_on_failure=False,
    )
    if resume:
        chosen["resume"] = run_dir
    try:
        result = await run(setup.flow, **chosen, **task.inputs)
    except Exception as exc:  # a task that cannot start (bad inputs, a taken run) fails alone
        return live_elsewhere(task, run_dir) or _failed(task, run_dir, exc, resumed=resume)
    if budget_stopped(result, ledger):
        return Unfinished(task.id)
    return task_result(task, result, resumed=resume)


def _failed(task: Task, run_dir: Path, exc: Exception, *, resumed: bool) -> TaskResult:
    error = f"{type(exc).__name__}: {exc}"
    return TaskResult(
        task.id, task.inputs, "failed", error=error, run_dir=str(run_dir), resumed=resumed
    )
