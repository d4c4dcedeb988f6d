"""One attempt at one task: run (or resume) its flow and turn the run into its result line.

The same code runs in the batch's own process (the local executor) and on a Ray worker, so a
task's run directory, resume rule and result line do not depend on where it ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swarmflow.batches.ledger import BatchLedger
from swarmflow.batches.outcome import budget_stopped, task_result, unrecorded_result
from swarmflow.batches.results import TaskResult
from swarmflow.batches.tasks import Task
from swarmflow.durable.run_dirs import has_log, read_log
from swarmflow.runner.lifecycle import run
from swarmflow.runtime.flow import Flow


async def run_task(
    flow: Flow[..., Any],
    task: Task,
    runs: Path,
    options: Mapping[str, Any],
    ledger: BatchLedger,
) -> TaskResult | None:
    """The task's result, or None when the shared budget stopped it (it stays unfinished).

    The run directory is `runs/<task id>`: a run that ended ok is not run again, one that was
    interrupted is resumed from its journal, and otherwise the run starts there.
    """
    run_dir = runs / task.id
    state = read_log(run_dir).status if has_log(run_dir) else None
    if state == "ok":  # it ended before its result line was written: nothing to run again
        return unrecorded_result(task, run_dir)
    chosen = dict(
        options, runs_root=runs, run_id=task.id, parent_ledger=ledger, raise_on_failure=False
    )
    if state is not None:
        chosen["resume"] = run_dir
    try:
        result = await run(flow, **chosen, **task.inputs)
    except Exception as exc:  # a task that cannot start (bad inputs) fails alone
        return TaskResult(task.id, task.inputs, "failed", error=f"{type(exc).__name__}: {exc}",
                          run_dir=str(run_dir), resumed=state is not None)  # fmt: skip
    if budget_stopped(result, ledger):
        return None
    return task_result(task, result, resumed=state is not None)
