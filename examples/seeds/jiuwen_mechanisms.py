"""openJiuwen's mechanisms, each switched off in turn around one coding flow and one model.

    swarmflow experiment run examples/seeds/jiuwen_mechanisms.py:EXPERIMENT --demo --out jiuwen
    swarmflow experiment report jiuwen --html jiuwen/report.html

The reference arm has all three mechanisms on: context processors (every deterministic level,
firing at a low watermark so the bundled tasks feel the pressure), language-server feedback
(ruff) and experience across the arm's tasks (a store of its own, reflected into after every
run). Each other arm switches one of them off, as an arm factor on the same flow; the tasks
run one at a time, in order, so experience can carry from one to the next. Results per task
category and duration bucket (the `tags` of the task set), graded by the tasks' tests.
`--demo` runs a scripted coder (labelled as such); `--model NAME` runs every arm on a model.
"""

from __future__ import annotations

from jiuwen_scripted import coder_model
from seed_grading import count_tests
from seed_suites import coding_suite

from swarmflow import Agent, Team, agent, flow
from swarmflow.core.context_policy import DETERMINISTIC_LEVELS
from swarmflow.experiments import Arm, Experiment, Factors, FunctionGrader


@flow(team=Team([Agent("coder", tools=("read_file", "edit", "list_files"), workspace="local",
                       max_steps=12, sandbox="none",
                       card="You fix issues in the calc package.")]))  # fmt: skip
async def fix(issue: str) -> str:
    """One coder fixes the issue in the checkout."""
    return (await agent("coder", issue)).text


CONTEXT_ON = {"processors": DETERMINISTIC_LEVELS, "high": 0.05, "low": 0.02}
CONTEXT_OFF = {"processors": (), "high": 1.0, "low": 0.9}
FEEDBACK = {"servers": ["ruff"], "wait": 10.0}
ALL_ON = {"context": CONTEXT_ON, "feedback": FEEDBACK, "experience": "fresh"}


def _arm(name: str, note: str, **off: object) -> Arm:
    factors = Factors.model_validate({**ALL_ON, **off})
    return Arm(name=name, flow=fix, demo=coder_model, factors=factors, note=note,
               reference=not off)  # fmt: skip


EXPERIMENT = Experiment(
    name="jiuwen-mechanisms",
    tasks=coding_suite,
    concurrency=1,
    run_budget={"seconds": 300},
    grader=FunctionGrader(fn=count_tests, threshold=1.0),
    arms=[
        _arm("all-on", "context processors, feedback and experience"),
        _arm("no-context", "context processors off", context=CONTEXT_OFF),
        _arm("no-feedback", "language-server feedback off", feedback="off"),
        _arm("no-experience", "experience off", experience="off"),
    ],
)
