"""Sweeps: factors and their levels expand into named arms, each the reference with those
factors set and nothing else changed."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, Team, flow, team
from swarmflow.experiments import Arm, Experiment, Factors, FunctionGrader, run_experiment
from swarmflow.testing import FunctionModel, tool_call
from tests.experiments.conftest import write_tasks

GRADER = FunctionGrader(fn=lambda task, result: True)


@flow(team=Team([Agent("lead", tools=("message_agent", "submit")), Agent("coder")],
                edges=[("lead", "coder")]))  # fmt: skip
async def crew(task: str) -> str:
    return (await team(task, lead="lead")).answer


def _lead() -> FunctionModel:
    return FunctionModel(lambda r: tool_call("submit", summary="done"), name="lead-scripted")


def _sweep(**more: object) -> Experiment:
    return Experiment(
        name="sweep", tasks="tasks.jsonl", grader=GRADER,
        arms=[Arm(name="base", flow=crew, reference=True, demo=_lead, run_budget={"tokens": 100_000},
                  note="one coder")],
        **more,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_full_grid_expands_into_named_controlled_arms() -> None:
    experiment = _sweep(factors={"coders": [2, 4, 8], "listening": ["blocking", "passive"]})
    names = [a.name for a in experiment.arms]
    assert names == [
        "base",
        "coders-2_listening-blocking", "coders-2_listening-passive",
        "coders-4_listening-blocking", "coders-4_listening-passive",
        "coders-8_listening-blocking", "coders-8_listening-passive",
    ]  # fmt: skip
    reference = experiment.reference
    for arm in experiment.arms[1:]:
        same = {k: v for k, v in dict(arm).items() if k not in ("name", "reference", "factors",
                                                                 "note")}  # fmt: skip
        assert same == {k: dict(reference)[k] for k in same}  # only the factors differ
        assert arm.factors.chosen() == ("listening", "instances")
    eight = experiment.arms[-1]
    assert eight.note == "coders=8, listening=passive"
    team_of = eight.variant().team
    assert team_of.names == ["lead", "coder", *(f"coder_{i}" for i in range(2, 9))]
    assert {a.listen for a in team_of.agents} == {"passive"}
    assert len(team_of.edges) == 8 and crew.team.names == ["lead", "coder"]  # flow unchanged


def test_a_listed_grid_makes_only_those_arms() -> None:
    experiment = _sweep(factors={"coders": [2, 4], "feedback": ["off", "lsp"]},
                        grid=[{"coders": 2}, {"coders": 4, "feedback": "lsp"}])  # fmt: skip
    assert [a.name for a in experiment.arms] == ["base", "coders-2", "coders-4_feedback-lsp"]
    assert experiment.arms[2].factors.feedback == "lsp"


@pytest.mark.parametrize(
    ("sweep", "grid", "message"),
    [
        ({"reviewers": [1, 2]}, "full", "sweep factor 'reviewers' is no factor"),
        ({"coders": 2}, "full", "a factor's levels are a list"),
        ({"coders": [2]}, [{"coders": 3}], "3 is no level of 'coders'"),
        ({"coders": [2]}, [{"listening": "passive"}], "'listening', not a swept factor"),
        ({"coders": [0]}, "full", "instances must be whole numbers from 1 to 64"),
        ({"listening": ["loud"]}, "full", "listening"),
    ],
)
def test_a_bad_sweep_is_one_clear_error(sweep: dict[str, object], grid: object,
                                        message: str) -> None:  # fmt: skip
    with pytest.raises(ValueError, match=message):
        _sweep(factors=sweep, grid=grid)


def test_a_swept_arms_runs_start_with_its_team_and_record_its_factors(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "t1", "inputs": {"task": "go"}}])
    experiment = _sweep(factors={"coders": [3]}).model_copy(update={"tasks": tasks})
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    start = json.loads((out / "arms/coders-3/runs/t1-r1/events.jsonl").read_text()
                       .splitlines()[0])  # fmt: skip
    assert start["agents"] == ["lead", "coder", "coder_2", "coder_3"]
    recorded = json.loads((out / "experiment.json").read_text())["arms"]
    assert recorded[1]["factors"] == {"instances": {"coder": ["coder", "coder_2", "coder_3"]}}
    assert recorded[0]["factors"] == {}


def test_a_sweep_can_vary_another_arm_than_the_reference() -> None:
    experiment = Experiment(
        name="sweep", tasks="tasks.jsonl", grader=GRADER, sweep_from="team",
        factors={"coders": [4]},
        arms=[Arm(name="solo", flow=crew, reference=True, demo=_lead),
              Arm(name="team", flow=crew, demo=_lead, factors=Factors(listening="passive"))],
    )  # fmt: skip
    swept = experiment.arms[-1]
    assert swept.name == "coders-4" and not swept.reference
    assert (swept.factors.listening, swept.factors.instances) == ("passive", {"coder": 4})
    with pytest.raises(ValueError, match="a sweep varies the arm 'crew', which is not declared"):
        _sweep(factors={"coders": [2]}, sweep_from="crew")


def test_a_bad_sweep_in_a_declaration_file_is_one_line_naming_the_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from swarmflow.cli import main

    declared = tmp_path / "declared.py"
    declared.write_text(
        "from swarmflow import Agent, Team, agent, flow\n"
        "from swarmflow.experiments import Arm, Experiment, FunctionGrader\n"
        "@flow(team=Team([Agent('coder')]))\nasync def f(task: str) -> str:\n"
        "    return (await agent('coder', task)).text\n"
        "EXPERIMENT = Experiment(name='x', tasks='t.jsonl', grader=FunctionGrader(fn=len),\n"
        "    arms=[Arm(name='a', flow=f, reference=True)], factors={'reviewers': [1, 2]})\n"
    )
    capsys.readouterr()
    argv = ["experiment", "run", f"{declared}:EXPERIMENT", "--demo", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "sweep factor 'reviewers' is no factor" in err and "its agents: coder" in err
