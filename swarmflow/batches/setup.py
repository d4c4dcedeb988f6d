"""What every task of one batch shares, wherever its executor runs it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.core.budget import Limits
from swarmflow.runtime.flow import Flow


@dataclass(frozen=True, slots=True)
class Setup:
    """What every task of one batch shares, wherever it runs."""

    flow: Flow[..., object]
    runs: Path
    options: dict[str, Any]
    """`run()`'s other options for every task (model, human, repo, ...); never a budget."""
    run_budget: Limits
    """Each run's own limits (`run(budget=...)`)."""
    budget: Limits
    """The shared budget of the whole batch: every run's ledger is a child of its ledger."""
