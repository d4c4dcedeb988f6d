"""Many runs at once: one flow over a task list, resumable, with a shared or per-task budget.

`batch(flow, "tasks.jsonl", out="batch", concurrency=32)`; `swarmflow batch` on the command line.
"""

from swarmflow.batches.local import batch
from swarmflow.batches.outcome import BatchResult
from swarmflow.batches.progress import Progress
from swarmflow.batches.results import TaskResult
from swarmflow.batches.tasks import Task, read_tasks

__all__ = ["BatchResult", "Progress", "Task", "TaskResult", "batch", "read_tasks"]
