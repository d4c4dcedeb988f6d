"""Crashes are faults, not choices: a role whose session ended in `error` makes the run
`failed`, the same way under every controller, so its organization is unverified, never
counted as not followed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, Team, agent, compact, flow, parallel, team
from swarmflow.cli import main
from swarmflow.core.errors import ModelUnavailable
from swarmflow.core.messages import ModelRequest
from swarmflow.experiments import (
    Arm,
    Assigned,
    Experiment,
    FunctionGrader,
    read_experiment,
    run_experiment,
)
from swarmflow.testing import FunctionModel, tool_call
from tests.experiments.conftest import write_tasks


@flow(team=Team([Agent("worker")]))
async def single(question: str) -> str:
    return (await agent("worker", question)).text


@flow(team=Team([Agent("coder_a"), Agent("coder_b")]))
async def workflow(question: str) -> str:
    """Two coders side by side; code keeps what came back."""
    coders = ("coder_a", "coder_b")
    done = compact(await parallel(lambda i: agent(coders[i], question), n=2))
    return " / ".join(out.text for out in done)


LEAD = Team(
    agents=[Agent("lead", tools=("message_agent", "submit")), Agent("helper")],
    edges=[("lead", "helper")],
)


@flow(team=LEAD)
async def teamed(question: str) -> str:
    return (await team(question, lead="lead")).answer


CRASHING = frozenset({"worker", "coder_a", "lead"})
"""The roles whose every model call fails, as a server that keeps answering 503 does."""


def _policy() -> FunctionModel:
    def step(request: ModelRequest) -> object:
        if request.agent in CRASHING:
            raise ModelUnavailable("the server answered 503 Service Unavailable")
        if request.agent == "helper":
            return "helped"
        return tool_call("submit", summary="done")

    return FunctionModel(step, name="crash-scripted")


def test_a_crashed_role_fails_the_run_under_every_controller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "q", "inputs": {"question": "go"}}])
    experiment = Experiment(
        name="crashes", tasks=tasks, grader=FunctionGrader(fn=lambda task, result: True),
        arms=[
            Arm(name="single", flow=single, demo=_policy, reference=True),
            Arm(name="workflow", flow=workflow, demo=_policy, controller="workflow"),
            Arm(name="team", flow=teamed, demo=_policy, controller="team",
                assigned=Assigned(delegation="required")),
        ],
    )  # fmt: skip
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    report = read_experiment(out)
    rows = {r.arm: r for r in report.rows}
    assert {arm: r.end_reason for arm, r in rows.items()} == {
        "single": "failed", "workflow": "failed", "team": "failed",
    }  # fmt: skip
    # Not adherent only because the crashed role did no work: unverified, in every arm.
    assert {arm: (r.adherent, r.unverified) for arm, r in rows.items()} == {
        "single": (False, True), "workflow": (False, True), "team": (False, True),
    }  # fmt: skip
    for arm in report.arms:
        assert arm.ends()["failed"] == 1.0
    # `swarmflow report` on the Team's run says why its organization is unverified.
    capsys.readouterr()
    assert main(["report", rows["team"].run_dir]) == 0
    assert "unverified: the session of lead ended in error" in capsys.readouterr().out
