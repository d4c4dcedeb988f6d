"""One progress display for a whole experiment: every arm's batch counted together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarmflow.batches.progress import Progress


@dataclass
class ExperimentProgress:
    """The counts of every arm's batch, and the runs graded so far."""

    total: int
    arms: dict[str, Progress] = field(default_factory=dict)
    """Arm -> its batch's latest `Progress`."""
    graded: int = 0
    warnings: list[str] = field(default_factory=list)

    def _sum(self, name: str) -> Any:
        return sum(getattr(p, name) for p in self.arms.values())

    @property
    def done(self) -> int:
        """Runs finished and graded (a run is done once its grade is written)."""
        return self.graded

    def line(self) -> str:
        """`experiment: finished 12/36 (4 skipped)  failed 1  running 6  graded 10 ...`."""
        skipped = int(self._sum("skipped"))
        shown = f" ({skipped} skipped)" if skipped else ""
        return (
            f"experiment: finished {int(self._sum('done'))}/{self.total}{shown}  "
            f"failed {self._sum('failed')}  running {self._sum('running')}  "
            f"graded {self.graded}  "
            f"tokens {int(self._sum('tokens')):,}  ${float(self._sum('cost')):.4f}"
        )

    def arm_lines(self) -> list[str]:
        """Per arm: `  single: finished 3/9  running 2  failed 0`."""
        return [
            f"  {arm}: finished {p.done}/{p.total}  running {p.running}  failed {p.failed}"
            for arm, p in self.arms.items()
        ]


ProgressHook = Callable[[ExperimentProgress], None]
