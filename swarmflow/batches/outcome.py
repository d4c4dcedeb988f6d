"""What a batch produced: each task's `TaskResult`, the batch's `BatchResult` and its summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from swarmflow.batches.ledger import BatchLedger
from swarmflow.batches.progress import Progress
from swarmflow.batches.results import RESULTS, TaskResult, jsonable
from swarmflow.batches.tasks import Task
from swarmflow.core.errors import BudgetExhausted
from swarmflow.runner.result import RunResult


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A task left without a result line this time: a re-run of the batch runs or resumes it.

    `why` is empty when the executor's `stopped` says it (the shared budget ran out, a Ray
    worker was lost); otherwise it is a warning of its own (the run is live elsewhere).
    """

    task: str
    why: str = ""


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
    def warnings(self) -> list[str]:
        """What the batch warned of: lines of `results.jsonl` it skipped, tasks it left."""
        return self.progress.warnings

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
    """The result line of a task whose run ended (ok, failed or paused): what the run spent
    over every process that ran it, as its log's `run_finished` event says."""
    error = result.error
    return TaskResult(
        task=task.id,
        input=task.inputs,
        status=result.status,
        output=jsonable(result.output),
        error=None if error is None else f"{type(error).__name__}: {error}",
        tokens=result.total_tokens,
        cost=result.total_cost,
        seconds=result.wall,
        run_dir=str(result.run_dir),
        resumed=resumed,
    )


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
