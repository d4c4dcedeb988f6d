"""One budget vocabulary: each run's limits travel as a typed `Limits` from the declaration
and the call down to every run, the arm's over the experiment's, the call's over both."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from swarmflow import Agent, Team, agent, flow
from swarmflow.core.budget import Limits
from swarmflow.experiments import Arm, Experiment, FunctionGrader, run_experiment
from swarmflow.report.log import read_log
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import write_tasks


@flow(team=Team([Agent("worker")]))
async def work(task: str) -> str:
    return (await agent("worker", task)).text


def test_each_runs_limits_reach_the_run_arm_over_experiment_call_over_both(
    tmp_path: Path,
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "t1", "inputs": {"task": "go"}}])
    experiment = Experiment(
        name="budgets", tasks=tasks, grader=FunctionGrader(fn=lambda task, result: True),
        run_budget=Limits(tokens=10_000, seconds=600),
        arms=[Arm(name="a", flow=work, reference=True),
              Arm(name="b", flow=work, run_budget={"tokens": 5_000, "cost": 1.5})],
    )  # fmt: skip
    assert experiment.arms[1].run_budget == Limits(tokens=5_000, cost=1.5)
    out = tmp_path / "out"
    model = FunctionModel(lambda request: "done")
    anyio.run(lambda: run_experiment(experiment, out=out, model=model, run_budget={"calls": 7}))

    def started(arm: str) -> dict[str, object]:
        log = read_log(out / "arms" / arm / "runs" / "t1-r1")
        return next(e for e in log.events if e.type == "run_started").limits

    assert started("a") == {"tokens": 10_000, "cost": None, "calls": 7, "seconds": 600}
    assert started("b") == {"tokens": 5_000, "cost": 1.5, "calls": 7, "seconds": 600}
    recorded = json.loads((out / "experiment.json").read_text())["arms"]
    assert [a["limits"] for a in recorded] == [
        {"tokens": 10_000, "seconds": 600}, {"tokens": 5_000, "cost": 1.5, "seconds": 600}
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("given", "match"),
    [({"tokns": 1}, "unknown budget keys"), ({"tokens": -1}, "budget tokens=-1")],
)
def test_a_bad_run_budget_is_refused_when_declared(given: dict[str, float], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        Arm(name="a", flow=work, run_budget=given)


def test_the_old_names_are_gone() -> None:
    with pytest.raises(ValidationError, match="budget"):
        Arm(name="a", flow=work, budget={"tokens": 1})
