"""An agent's context policy: which context processors may fire, at what pressure, and which
model writes its summaries. Pure data; `swarmflow.context` holds the processors themselves.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

DETERMINISTIC_LEVELS = (
    "collapse_loops",
    "offload",
    "reduce_structure",
    "elide_observations",
    "drop_oldest",
    "compact_session",
)
"""The built-in levels that need no model, in the order they fire (docs/context.md)."""
SUMMARISE = "summarise"
"""The level that asks a model for a summary of the older turns (opt-in: it costs calls)."""
BACKSTOP = "cut_observations"
"""The level that always stays: it cuts the largest observations, so a request always fits."""


class ContextPolicy(BaseModel):
    """What a session may do to its history under context pressure (docs/context.md).

    Pressure is the whole request's share of the agent's context budget. When the next
    request would pass `high`, the processors fire in their registered order until the
    history is back under `low`; between two compactions every request extends the one
    before it, so the provider's prompt cache keeps serving the prefix.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    processors: tuple[str, ...] = DETERMINISTIC_LEVELS
    """The levels this agent may use, by registered name; their order is the registry's.
    `cut_observations` is always added as the last resort."""
    high: float = Field(default=0.9, gt=0.0, le=1.0)
    """The share of the context budget at which a compaction starts."""
    low: float = Field(default=0.5, gt=0.0, le=1.0)
    """The least share a compaction reduces the request to; the block rule
    (`swarmflow.context.blocks`) keeps more when the observed growth per step makes a
    smaller block cheaper (docs/context.md)."""
    keep_recent: int = Field(default=6, ge=1)
    """Messages at the end of the history no level but the last resort touches."""
    offload_chars: int = Field(default=4_000, ge=200)
    """An older observation longer than this is written to a file and replaced by a note."""
    summariser: Any = None
    """The model that writes summaries: a model object or name; None uses the agent's own."""
    summary_tokens: int = Field(default=800, ge=64)
    """The most output tokens one summary may take (its calls are charged like any other)."""
    summary_allowance: int | None = Field(default=None, ge=0)
    """Tokens all of this agent's summaries may take in a run, besides the run's budget
    (None: only the budget limits them). A summary it cannot pay for is refused."""

    @model_validator(mode="before")
    @classmethod
    def _listed(cls, data: object) -> object:
        """A list of level names stands for the policy with those levels (the `.swarm`
        agent block's `context [offload, summarise]`); "none" for none but the last resort;
        `processors` may be one name."""
        if isinstance(data, str | list | tuple):
            data = {"processors": data}
        if isinstance(data, dict) and isinstance(data.get("processors"), str):
            names = data["processors"]
            data = {**data, "processors": () if names in ("none", "off") else (names,)}
        return data

    @model_validator(mode="after")
    def _watermarks(self) -> ContextPolicy:
        if self.low >= self.high:
            raise ValueError(
                f"context policy: low ({self.low}) must be below high ({self.high}), so that a "
                "compaction leaves room before the next one"
            )
        return self

    @property
    def levels(self) -> tuple[str, ...]:
        """The assigned levels with the last resort, as the adherence axis compares them."""
        names = tuple(dict.fromkeys(self.processors))
        return names if BACKSTOP in names else (*names, BACKSTOP)


DEFAULT_POLICY = ContextPolicy()
"""The policy of an agent that declares none: every deterministic level, no summariser."""
