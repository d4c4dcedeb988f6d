"""The graders an experiment may declare: `tests`, `function` and `rubric`.

- `TestsGrader`: the run's product (its `Patch`, or else its final checkout) is applied to a
  fresh checkout of the task's repository at its base commit, and the task's test command
  runs there in the sandbox, bounded in time (`tests_grading.py`).
- `FunctionGrader`: a callable `(task, result) -> bool | float` (1.0 or True resolves).
- `RubricGrader`: a judge model scores every rubric item of the task pass or fail; the task
  is resolved only when every item passes, and the items' pass rate is reported too. The
  judge runs as its own run, with its own budget, apart from the arm's (`rubric.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from swarmflow.core.budget import Limits
from swarmflow.experiments.budgets import RunBudget


class TestsGrader(BaseModel):
    """Resolved when the task's tests pass on its base commit with the run's product."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    __test__ = False  # not a pytest test class, whatever its name

    kind: Literal["tests"] = "tests"
    seconds: float = Field(300.0, gt=0, le=3600)
    """How long the test command may run before it is killed (and the run not resolved)."""
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """As an agent's `run_shell`: bubblewrap when it is there (`auto`), only there, or never.
    `bwrap` refuses to grade where bubblewrap is missing (as `--require-sandbox` does)."""
    restore_tests: bool = True
    """Restore the files holding the task's tests from its base before they run (a product's
    changes to them are discarded and its grade says `tests_edited`); False where editing
    the tests is the job."""


class FunctionGrader(BaseModel):
    """Resolved when `fn(task, result)` gives True or a score of at least `threshold`."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kind: Literal["function"] = "function"
    fn: Callable[..., object]
    threshold: float = Field(1.0, ge=0, le=1)


class RubricGrader(BaseModel):
    """Each rubric item judged pass or fail by a model; resolved when every item passes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["rubric"] = "rubric"
    run_budget: RunBudget = Limits(tokens=200_000)
    """The judge's limits for each graded run (a run of its own), apart from the arm's."""
    card: str = (
        "You grade an answer against a rubric. For every rubric item, say whether the answer "
        "satisfies it (true) or not (false), judging only what the answer says."
    )


Grader = Annotated[TestsGrader | FunctionGrader | RubricGrader, Field(discriminator="kind")]
