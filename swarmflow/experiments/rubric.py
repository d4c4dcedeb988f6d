"""The `rubric` grader: a judge model scores each rubric item of a task pass or fail.

The judge is a run of its own (`OUT/judge/<arm>-<task>-r<repeat>[-N]/`), with its own event
log and the grader's budget, so its calls are recorded and budgeted apart from the arm's: the
arm's tokens never include the judge's, and the judge's are reported beside them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from pydantic import BaseModel, Field

from swarmflow.calls.metered import session_purpose
from swarmflow.core.team import Agent, Team
from swarmflow.experiments.graders import RubricGrader
from swarmflow.experiments.judge_prompt import judge_card, judge_prompt
from swarmflow.experiments.layout import RunKey
from swarmflow.experiments.run_ids import judge_run_id
from swarmflow.experiments.tasks import ExperimentTask
from swarmflow.operators import agent
from swarmflow.runner.lifecycle import run
from swarmflow.runner.wiring import ModelSpec
from swarmflow.runtime.flow import Flow

JUDGE = "judge"


class ItemVerdicts(BaseModel):
    """The judge's verdict on every rubric item, in the rubric's order."""

    passed: list[bool] = Field(description="For each rubric item in order: true if satisfied.")


@dataclass(frozen=True, slots=True)
class RubricVerdict:
    passed: int
    items: int
    tokens: int
    cost: float
    note: str


def judge_flow(grader: RubricGrader) -> Flow[..., object]:
    """The judge's flow: one structured call of one agent."""

    async def judge(answer: str, items: list[str]) -> list[bool]:
        verdicts = await agent(JUDGE, judge_prompt(answer, tuple(items)), output=ItemVerdicts)
        assert isinstance(verdicts.value, ItemVerdicts)
        return list(verdicts.value.passed)

    team = Team(agents=[Agent(JUDGE, card=judge_card(grader.card), max_steps=4)])
    return Flow(judge, team=team, budget=grader.run_budget, name="rubric_judge")


async def grade_rubric(
    grader: RubricGrader,
    task: ExperimentTask,
    key: RunKey,
    output: object,
    *,
    root: Path,
    model: ModelSpec,
) -> RubricVerdict:
    """Judge `output` against the task's rubric in a run of its own under `root`."""
    items = task.rubric
    if not items:
        return RubricVerdict(0, 0, 0, 0.0, f"task {task.id} has no rubric items")
    await anyio.to_thread.run_sync(lambda: root.mkdir(parents=True, exist_ok=True))
    token = session_purpose.set("judge")  # its calls are recorded with purpose "judge"
    try:
        result = await run(
            judge_flow(grader),
            model=model,
            runs_root=root,
            run_id=_free_id(root, key),
            raise_on_failure=False,
            answer=_as_text(output),
            items=list(items),
        )
    finally:
        session_purpose.reset(token)
    if result.status != "ok" or not isinstance(result.output, list):
        why = f"the judge's run {result.run_dir} ended {result.status}"
        return RubricVerdict(0, len(items), result.total_tokens, result.total_cost, why)
    verdicts = [bool(v) for v in result.output][: len(items)]
    passed = sum(verdicts)
    note = f"{passed}/{len(items)} rubric items pass (judge run {result.run_dir.name})"
    return RubricVerdict(passed, len(items), result.total_tokens, result.total_cost, note)


def _free_id(root: Path, key: RunKey) -> str:
    """A run id no judge run of this folder has: a judge cut by a kill is asked again anew."""
    base = judge_run_id(key)
    n, candidate = 1, base
    while (root / candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _as_text(output: object) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, default=str, indent=1)
