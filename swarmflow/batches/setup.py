"""What every task of one batch invocation shares, wherever its executor runs it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.core.budget import Limits
from swarmflow.runtime.flow import Flow


@dataclass(frozen=True, slots=True)
class Setup:
    """What every task of one batch invocation shares, wherever it runs."""

    flow: Flow[..., Any]
    runs: Path
    options: dict[str, Any]
    """`run()`'s options for every task, its per-task `budget` included."""
    budget: Limits
    """The shared budget of the whole batch."""
    concurrency: int
