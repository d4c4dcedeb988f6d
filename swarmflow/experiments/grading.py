"""Grading one finished run with the experiment's grader, into its `Grade`.

A run's product is its `Patch` when its output is one (a dict with a `diff`, or an object
with a `patch` that has one), and otherwise its checkout as the run left it: either way it
is applied to a fresh checkout at the task's base commit, never graded in place, by the rules
of `products.py`. Every grade names the grader that gave it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from swarmflow.experiments.graders import FunctionGrader, Grader, RubricGrader, TestsGrader
from swarmflow.experiments.grades import Grade
from swarmflow.experiments.layout import Layout, RunKey
from swarmflow.experiments.products import product_diff
from swarmflow.experiments.rubric import grade_rubric
from swarmflow.experiments.tasks import ExperimentTask
from swarmflow.experiments.tests_grading import grade_tests
from swarmflow.runner.wiring import ModelSpec


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a `function` grader is given about a run (with the task)."""

    key: RunKey
    status: str
    output: object
    error: str | None
    run_dir: Path
    checkout: Path | None
    """The run's own checkout of the task's repository, as the run left it."""


def grader_identity(grader: Grader, judge_model: object = None) -> str:
    """Which grader this is, as every grade it gives records it."""
    if isinstance(grader, TestsGrader):
        return (
            f"tests(seconds={grader.seconds:g}, sandbox={grader.sandbox}, "
            f"restore_tests={grader.restore_tests})"
        )
    if isinstance(grader, FunctionGrader):
        fn = grader.fn
        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        return f"function({name}, threshold={grader.threshold:g})"
    judge = getattr(judge_model, "name", None) or judge_model
    return f"rubric(judge={judge if isinstance(judge, str) else type(judge_model).__name__})"


async def grade_run(
    grader: Grader,
    task: ExperimentTask,
    outcome: RunOutcome,
    layout: Layout,
    *,
    base: str,
    judge_model: ModelSpec = None,
    debris: tuple[str, ...] = (),
) -> Grade:
    """The run's grade. A run that did not end ok is not resolved, and is not graded.
    `debris`: the arm's own build-debris patterns (`products.py`)."""
    key = outcome.key
    common = {
        "arm": key.arm,
        "task": key.task,
        "repeat": key.repeat,
        "grader": grader_identity(grader, judge_model),
    }
    if outcome.status != "ok":
        return Grade(**common, resolved=False, score=0.0, note=f"the run ended {outcome.status}")
    if isinstance(grader, TestsGrader):
        diff = await product_diff(outcome.output, outcome.checkout, base)
        verdict = await grade_tests(grader, task, base, diff, layout.grading(key), debris=debris)
        return Grade(
            **common,
            resolved=verdict.resolved,
            score=float(verdict.resolved),
            sandboxed=verdict.sandboxed,
            note=verdict.note,
            tests_edited=bool(verdict.applied.tests_edited),
            grade_error=verdict.grade_error,
        )
    if isinstance(grader, FunctionGrader):
        score = _score(grader.fn(task, outcome))
        resolved = score >= grader.threshold
        return Grade(**common, resolved=resolved, score=score, note=f"score {score:g}")
    assert isinstance(grader, RubricGrader)
    rubric = await grade_rubric(
        grader, task, key, outcome.output, root=layout.judge(), model=judge_model
    )
    share = rubric.passed / rubric.items if rubric.items else 0.0
    return Grade(
        **common,
        resolved=bool(rubric.items) and rubric.passed == rubric.items,
        score=share,
        rubric_passed=rubric.passed,
        rubric_items=rubric.items,
        judge_tokens=rubric.tokens,
        judge_cost=rubric.cost,
        note=rubric.note,
    )


def _score(value: object) -> float:
    """A function grader's answer as a score in 0..1 (True is 1, False is 0)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return min(1.0, max(0.0, float(value)))
    raise TypeError(f"a function grader returns a bool or a float, got {type(value).__name__}")
