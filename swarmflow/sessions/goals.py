"""Goal evaluators for the outer loop: continue, complete or blocked, apart from hard caps.

An evaluator is any callable taking a `GoalView` and returning a decision, optionally with a
note: `"complete"`, `("continue", "tests still fail")`, or an awaitable of either.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import Message

Decision = Literal["continue", "complete", "blocked"]
_DECISIONS = ("continue", "complete", "blocked")


@dataclass(frozen=True, slots=True)
class GoalView:
    """What an evaluator sees after a round."""

    agent: str
    session: str
    answer: str
    history: tuple[Message, ...]
    round: int


async def evaluate_goals(evaluators: Sequence[Any], view: GoalView) -> tuple[str, Decision, str]:
    """Ask each evaluator in order; the first non-complete decision wins."""
    for evaluator in evaluators:
        decision, note = await _ask(evaluator, view)
        if decision != "complete":
            return _name(evaluator), decision, note
    return (_name(evaluators[-1]) if evaluators else "none"), "complete", ""


async def _ask(evaluator: Any, view: GoalView) -> tuple[Decision, str]:
    answer = evaluator(view)
    if inspect.isawaitable(answer):
        answer = await answer
    decision, note = (answer, "") if isinstance(answer, str) else tuple(answer)
    if decision not in _DECISIONS:
        raise ConfigError(
            f"goal evaluator {_name(evaluator)} answered {decision!r}; expected one of {_DECISIONS}"
        )
    return decision, str(note)


def _name(evaluator: Any) -> str:
    return getattr(evaluator, "__name__", type(evaluator).__name__)
