"""The live counts of a batch and the one-line progress display built from them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol


class Spending(Protocol):
    """What the shared budget has spent so far: a batch ledger, or a Ray batch's view of one."""

    @property
    def spent_tokens(self) -> int: ...

    @property
    def spent_cost(self) -> float: ...


@dataclass(slots=True)
class Progress:
    """Counts of one batch invocation; `ledger` is the shared budget every run draws on."""

    total: int
    ledger: Spending
    skipped: int = 0
    ok: int = 0
    failed: int = 0
    running: int = 0
    earlier_tokens: int = 0
    earlier_cost: float = 0.0
    started: float = field(default_factory=time.monotonic)
    warnings: list[str] = field(default_factory=list)
    """What the batch warned of so far, in order (a display shows each new one once)."""

    @property
    def finished_now(self) -> int:
        """Tasks finished by this invocation (not the ones skipped as already done)."""
        return self.ok + self.failed

    @property
    def done(self) -> int:
        return self.skipped + self.finished_now

    @property
    def tokens(self) -> int:
        return self.earlier_tokens + self.ledger.spent_tokens

    @property
    def cost(self) -> float:
        return self.earlier_cost + self.ledger.spent_cost

    def rate(self) -> float:
        """Tasks finished per minute by this invocation."""
        minutes = max(time.monotonic() - self.started, 1e-9) / 60
        return self.finished_now / minutes

    def seconds_left(self) -> float | None:
        """The time the rest should take at the rate so far; None before the first finish."""
        rate = self.rate()
        if rate <= 0:
            return None
        return (self.total - self.done) / rate * 60

    def line(self) -> str:
        """`done 120/200 (3 skipped)  failed 2  running 32  tokens 51,200  $0.4100 ...`."""
        left = self.seconds_left()
        skipped = f" ({self.skipped} skipped)" if self.skipped else ""
        return (
            f"done {self.done}/{self.total}{skipped}  failed {self.failed}  "
            f"running {self.running}  tokens {self.tokens:,}  ${self.cost:.4f}  "
            f"{self.rate():.1f}/min  left {_clock(left)}"
        )


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
