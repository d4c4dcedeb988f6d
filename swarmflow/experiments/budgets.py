"""The one typed budget of an experiment's declarations: each run's `Limits`, given as such or
as a mapping such as `{"tokens": 200_000}`, checked when the declaration is built."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError


def _limits(value: Any) -> Limits:
    try:
        return Limits.coerce(value)
    except ConfigError as exc:
        raise ValueError(exc.message) from None


RunBudget = Annotated[Limits, BeforeValidator(_limits)]
"""Each run's limits (tokens, cost, calls, seconds): a `Limits`, or a mapping of them."""
