"""What a batch produced: each task's `TaskResult`, the batch's `BatchResult` and its summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.batches.ledger import BatchLedger
from swarmflow.batches.progress import Progress
from swarmflow.batches.results import RESULTS, TaskResult
from swarmflow.batches.tasks import Task
from swarmflow.core.errors import BudgetExhausted
from swarmflow.durable.run_dirs import read_log
from swarmflow.runner.result import RunResult


@dataclass(slots=True)
class BatchResult:
    """The finished tasks (in task-list order, earlier invocations' included) and the counts."""

    out: Path
    results: list[TaskResult]
    total: int
    progress: Progress
    stopped: str | None = None
    """Why tasks were left unstarted or unfinished (the shared budget ran out), if they were."""

    @property
    def results_path(self) -> Path:
        return self.out / RESULTS

    @property
    def unfinished(self) -> int:
        """Tasks without a result: a re-run of the same batch runs or resumes them."""
        return self.total - len(self.results)

    def counts(self) -> Counter[str]:
        return Counter(r.status for r in self.results)

    def summary(self) -> str:
        """A table: tasks, tokens, cost and seconds per status, then the unfinished count."""
        rows = [f"{'STATUS':<10} {'TASKS':>6} {'TOKENS':>10} {'COST':>10} {'SECONDS':>9}"]
        for status in sorted(self.counts()):
            mine = [r for r in self.results if r.status == status]
            rows.append(
                f"{status:<10} {len(mine):>6} {sum(r.tokens for r in mine):>10,} "
                f"{'$' + format(sum(r.cost for r in mine), '.4f'):>10} "
                f"{sum(r.seconds for r in mine):>9.1f}"
            )
        if self.unfinished:
            rows.append(f"{'unfinished':<10} {self.unfinished:>6}")
        rows.append(f"results: {self.results_path}")
        if self.stopped:
            rows.append(f"stopped: {self.stopped}")
        return "\n".join(rows)


def task_result(task: Task, result: RunResult, *, resumed: bool) -> TaskResult:
    """The result line of a task whose run ended (ok, failed or paused)."""
    error = result.error
    return TaskResult(
        task=task.id,
        input=task.inputs,
        status=result.status,
        output=_plain(result.output),
        error=None if error is None else f"{type(error).__name__}: {error}",
        tokens=result.tokens,
        cost=result.cost,
        seconds=result.wall,
        run_dir=str(result.run_dir),
        resumed=resumed,
    )


def unrecorded_result(task: Task, run_dir: Path) -> TaskResult:
    """A run that ended ok just before its batch was stopped, so its output was not recorded."""
    log = read_log(run_dir)
    return TaskResult(
        task=task.id,
        input=task.inputs,
        status="ok",
        tokens=log.spent.tokens,
        cost=log.spent.cost,
        run_dir=str(run_dir),
        notes=["the run ended ok before the batch was stopped; its output is not recorded "
               "here (its events are in run_dir)"],
    )  # fmt: skip


def budget_stopped(result: RunResult, ledger: BatchLedger) -> bool:
    """Whether a run that did not end ok was stopped because the batch ledger refused a call."""
    return (
        result.status != "ok"
        and ledger.refused is not None
        and _budget_error(result.error) is not None
    )


def _budget_error(error: BaseException | None) -> BudgetExhausted | None:
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, BudgetExhausted):
            return current
        todo += [current.__cause__, current.__context__]
        if isinstance(current, BaseExceptionGroup):
            todo += list(current.exceptions)
    return None


def _plain(value: Any) -> Any:
    """A JSON-ready output: pydantic models dumped, other objects as their repr."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return repr(value)
