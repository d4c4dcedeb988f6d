"""The switch that blocks real model calls in tests, kept off the test helpers' import path.

Real model calls are blocked while `SWARMFLOW_BLOCK_MODEL_CALLS=1` (the test suite sets it);
`allow_model_calls()` lifts the block for a scope. `run()` checks each model it resolves here,
so the production path never imports `swarmflow.testing`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from swarmflow.core.errors import ModelCallsBlocked

BLOCK_ENV = "SWARMFLOW_BLOCK_MODEL_CALLS"


@dataclass
class _Switch:
    allowed: list[bool] = field(default_factory=list)


_switch = _Switch()


def check_real_call_allowed(model: object) -> None:
    """Raise `ModelCallsBlocked` for a real model while calls are blocked."""
    if getattr(model, "is_test_model", False) or _switch.allowed:
        return
    if os.environ.get(BLOCK_ENV) == "1":
        raise ModelCallsBlocked(
            f"real model call to {getattr(model, 'name', model)!r} blocked in tests; "
            "mark the test with @pytest.mark.allow_model_calls or use allow_model_calls()"
        )


@contextmanager
def allow_model_calls() -> Iterator[None]:
    """Permit real model calls inside the block."""
    _switch.allowed.append(True)
    try:
        yield
    finally:
        _switch.allowed.pop()
