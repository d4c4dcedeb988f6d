"""Many runs at once: one flow over a task list, resumable, with a shared or per-run budget.

`batch(flow, "tasks.jsonl", out="batch", concurrency=32)`; `swarmflow batch` on the command line.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.batches.local import batch as batch
    from swarmflow.batches.outcome import BatchResult as BatchResult
    from swarmflow.batches.progress import Progress as Progress
    from swarmflow.batches.results import TaskResult as TaskResult
    from swarmflow.batches.tasks import Task as Task
    from swarmflow.batches.tasks import read_tasks as read_tasks

export_lazily(__name__)
