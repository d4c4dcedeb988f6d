"""The batch ledger: the parent of every run's ledger, remembering whether it refused a call."""

from __future__ import annotations

from swarmflow.core.budget import Charge, Ledger, Limits


class BatchLedger(Ledger):
    """A `Ledger` that records its first refusal, so the batch starts no further task.

    A refusal reaches the flow as a `BudgetExhausted` that no longer names the ledger (the agent
    call reports it as its own stop), so the batch asks the ledger itself what it refused.
    """

    __slots__ = ("refused",)

    def __init__(self, limits: Limits) -> None:
        super().__init__("batch", limits)
        self.refused: str | None = None

    def _over(self) -> str | None:
        return self._remember(super()._over())

    def _misfit(self, charge: Charge) -> str | None:
        return self._remember(super()._misfit(charge))

    def _remember(self, why: str | None) -> str | None:
        if why is not None and self.refused is None:
            self.refused = f"the batch budget refused a model call ({why})"
        return why
