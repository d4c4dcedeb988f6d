"""What a processor is given besides the history: the pressure it works under and the
session's surroundings (where it may offload, who pays for a summary)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.core.budget import Ledger
from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.messages import Model
from swarmflow.core.pricing import Price
from swarmflow.core.tokens import TokenEstimator


@dataclass(frozen=True, slots=True)
class Surroundings:
    """The session a compaction works for."""

    agent: str
    session: str
    workspace: Path | None
    """The agent's workspace root: offloaded content goes there, where its file tools read."""
    run_dir: Path | None
    """Where offloaded content goes when the agent has no workspace."""
    model: Model
    """The model that writes summaries (the policy's summariser, or the agent's own)."""
    model_name: str | None
    price: Price
    ledgers: list[Ledger]
    """Every ledger the session's calls charge: a summary is charged to the same ones."""
    estimator: TokenEstimator
    emit: Callable[..., None]
    """Records an event with the session's envelope (`AgentSession.emit`)."""
    context_tokens: int
    """The agent's context budget in tokens (a summary's own request must fit it too)."""


@dataclass(frozen=True, slots=True)
class Pressure:
    """The room a compaction works in, in estimator units (`swarmflow.core.tokens`)."""

    room: int
    """What the history may take at most (the budget less the card and tool schemas)."""
    target: int
    """What the compaction reduces the history to: the policy's low watermark."""
    policy: ContextPolicy
    around: Surroundings

    def over(self, units: int) -> bool:
        return units > self.target

    def tokens(self, units: int) -> int:
        return self.around.estimator.tokens(units, self.around.model_name)


def describe(value: Any, limit: int = 80) -> str:
    """`value` as one short line for an event's `removed` text."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
