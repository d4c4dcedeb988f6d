"""Many runs at once: one flow over a task list, resumable, with a shared or per-task budget.

`batch(flow, "tasks.jsonl", out="batch", concurrency=32)`; `swarmflow batch` on the command line.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.batches.local import batch
    from swarmflow.batches.outcome import BatchResult
    from swarmflow.batches.progress import Progress
    from swarmflow.batches.results import TaskResult
    from swarmflow.batches.tasks import Task, read_tasks

export_lazily(
    __name__,
    {
        "swarmflow.batches.local": ("batch",),
        "swarmflow.batches.outcome": ("BatchResult",),
        "swarmflow.batches.progress": ("Progress",),
        "swarmflow.batches.results": ("TaskResult",),
        "swarmflow.batches.tasks": ("Task", "read_tasks"),
    },
)

__all__ = ["BatchResult", "Progress", "Task", "TaskResult", "batch", "read_tasks"]
