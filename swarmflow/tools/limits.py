"""Time limits that respect the run's deadline: a tool stops a little before it, and says so."""

from __future__ import annotations

import math
from dataclasses import dataclass

import anyio

DEADLINE_MARGIN = 0.25
"""Seconds a tool keeps free before the deadline, so its observation is recorded in time."""


@dataclass(frozen=True, slots=True)
class TimeLimit:
    """How long a tool may run, and whether the run's deadline (not the tool's own) set it."""

    seconds: float
    by_deadline: bool

    def reason(self) -> str:
        """Why the work stopped, in words for the model."""
        if self.by_deadline:
            return "the run's deadline arrived"
        return f"the {self.seconds:g}s time limit was reached"


def time_limit(requested: float) -> TimeLimit:
    """`requested` seconds, or less when the enclosing cancel scopes' deadline comes sooner."""
    deadline = anyio.current_effective_deadline()
    if math.isinf(deadline):
        return TimeLimit(requested, False)
    left = deadline - anyio.current_time() - DEADLINE_MARGIN
    if left < requested:
        return TimeLimit(max(left, 0.0), True)
    return TimeLimit(requested, False)
