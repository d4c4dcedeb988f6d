"""The example experiment: Single against a two-coder Workflow and a Team under two cards.

    swarmflow experiment run examples/experiments/experiment.py:EXPERIMENT --demo --out exp-1
    swarmflow experiment report exp-1 --html exp-1/report.html

Four arms over the bundled suite of six tiny repositories, three repeats each, graded by
their tests. `--demo` runs the scripted policies of `ablation_scripted.py` (no LLM, labelled as
such); `--model NAME` runs every arm on one model of an OpenAI-compatible endpoint.
"""

from __future__ import annotations

from ablation_flows import duo_fix, single_fix, team_fix
from ablation_scripted import duo_policy, single_policy, team_policy
from ablation_suite import write_suite

from swarmflow.experiments import Arm, Assigned, Experiment, TestsGrader

EXPERIMENT = Experiment(
    name="closing-card",
    tasks=write_suite,
    repeats=3,
    run_budget={"seconds": 600},
    grader=TestsGrader(seconds=120),
    arms=[
        Arm(name="single", flow=single_fix, demo=single_policy, reference=True,
            note="one coder, to completion"),
        Arm(name="workflow", flow=duo_fix, demo=duo_policy, controller="workflow",
            assigned=Assigned(delegation="required"), note="two coders in turn, by code"),
        Arm(name="team-optional", flow=team_fix, demo=team_policy, controller="team",
            assigned=Assigned(delegation="offered"), note="Team, optional closing section"),
        Arm(name="team-mandatory", flow=team_fix, demo=team_policy, controller="team",
            cards={"adopter": "cards/adopter_mandatory.md.j2"},
            assigned=Assigned(delegation="required"), note="Team, mandatory closing section"),
    ],
)  # fmt: skip
