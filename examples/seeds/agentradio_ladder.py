"""AgentRadio's ladder: B0, B1, L1, L2, L3 on questions about a repository, graded by rubrics.

    swarmflow experiment run examples/seeds/agentradio_ladder.py:EXPERIMENT --demo --out ladder
    swarmflow experiment report ladder --html ladder/report.html

- B0: one agent answers alone (the reference);
- B1: the best of six independent B0 runs per question, chosen by the grader as an oracle
  (a deployed system has no oracle: the report says so), all six runs paid for;
- L1: division of labour without review: three members each look at part of the repository
  and an assembler joins their reports (a Workflow);
- L2: the four-agent team of `examples/team_repo_qa`, negotiating every phase on the board
  under blocking receive (`wait_for_mention` is a step);
- L3: the same team and protocol under passive awareness: the one bit that differs from L2
  is where mentions are heard, set as the arm's `listening` factor on the same flow.

Reported beside the usual tables: task accuracy (every rubric item passes) and rubric pass
rate, per category, each step against the one before with McNemar's exact test, the
questions each step gains and loses, the cost per task, and the noise across three repeats.
`--demo` runs scripted policies (labelled as such); `--model NAME` runs every arm on a model.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "team_repo_qa"))

from ladder_scripted import PATTERNS, divided_model, solo_model  # noqa: E402
from qa_flow import repo_qa  # noqa: E402
from qa_scripted import scripted_model  # noqa: E402
from seed_grading import scripted_judge  # noqa: E402
from seed_suites import qa_suite  # noqa: E402

from swarmflow import Agent, Team, agent, flow, parallel  # noqa: E402
from swarmflow.experiments import Arm, BestOf, Experiment, Factors, RubricGrader  # noqa: E402

READ = ("list_files", "search", "read_file")
MEMBERS = ("agent2", "agent3", "agent4")


@flow(team=Team([Agent("agent1", tools=READ, workspace="local", max_steps=12)]))
async def solo_qa(question: str) -> str:
    """B0: one agent reads the repository and answers."""
    return (await agent("agent1", question)).text


DIVIDED = Team(
    [Agent("agent1", max_steps=4),
     *(Agent(m, tools=READ, workspace="local", max_steps=8) for m in MEMBERS)],
    edges=[(m, "agent1") for m in MEMBERS],
)  # fmt: skip


@flow(team=DIVIDED)
async def divided_qa(question: str) -> str:
    """L1: each member looks at its own part; the assembler joins what they report."""
    reports = await parallel(*(
        agent(m, f"{question} Look at the files matching {PATTERNS[m]}; report what the first "
                 "one says.") for m in MEMBERS
    ))  # fmt: skip
    joined = "\n".join(f"- {r.value.text}" for r in reports if r.ok)
    return (await agent("agent1", f"Question: {question}\nReports:\n{joined}")).text


EXPERIMENT = Experiment(
    name="agentradio-ladder",
    tasks=qa_suite,
    repeats=3,
    run_budget={"seconds": 600},
    grader=RubricGrader(run_budget={"tokens": 200_000}),
    judge_demo=scripted_judge,
    ladder=("B0", "B1", "L1", "L2", "L3"),
    arms=[
        Arm(name="B0", flow=solo_qa, demo=solo_model, reference=True, note="one agent"),
        Arm(name="B1", flow=solo_qa, demo=solo_model, best_of=BestOf(k=6),
            note="best of six single runs, oracle"),
        Arm(name="L1", flow=divided_qa, demo=divided_model, controller="workflow",
            note="division of labour, no review"),
        Arm(name="L2", flow=repo_qa, demo=lambda: scripted_model("blocking"), controller="team",
            factors=Factors(listening="blocking"), note="negotiation, blocking receive"),
        Arm(name="L3", flow=repo_qa, demo=lambda: scripted_model("passive"), controller="team",
            factors=Factors(listening="passive"), note="negotiation, passive awareness"),
    ],
)  # fmt: skip
