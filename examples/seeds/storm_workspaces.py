"""STORM's comparison: one coder, a team in git worktrees merged at the end, a team in one
shared workspace with version checks, and a sweep of the number of coders.

    swarmflow experiment run examples/seeds/storm_workspaces.py:EXPERIMENT --demo --out storm
    swarmflow experiment report storm --html storm/report.html

Two tiny packages; each task adds a method to a shared interface (a base class) and
implements it in the four modules that subclass it, so the coders' parts meet in one file.
The team is one Workflow (`team_fix`) that splits the modules among the coders; its arms differ
in the `workspace` factor and the number of `coder` instances alone. Graded by a count of
tests: the report gives the weighted rate (tests passed over all tests) and the macro rate
(the mean of the per-repository rates), with cost and wall clock per arm. `--demo` runs a
scripted coder (labelled as such); `--model NAME` runs every arm on a model.
"""

from __future__ import annotations

import re

from seed_grading import count_tests
from seed_suites import interface_suite
from storm_scripted import coder_model

from swarmflow import Agent, Team, agent, flow, parallel
from swarmflow.experiments import Arm, Experiment, Factors, FunctionGrader

FILES = ("read_file", "write_file", "list_files")
CODER = Agent("coder", tools=FILES, workspace="local", max_steps=30, sandbox="none",
              description="Implements its part of an interface change.")  # fmt: skip


@flow(team=Team([CODER]))
async def solo_fix(issue: str) -> str:
    """One coder changes the interface and every module."""
    return (await agent("coder", issue)).text


@flow(team=Team([CODER]))
async def team_fix(issue: str, instances: dict[str, list[str]] | None = None) -> object:
    """The modules split among the coders, one part each, at once. In worktrees each coder's
    patch is kept and merged at the end (in order; one that no longer applies is dropped)."""
    coders = (instances or {}).get("coder", ["coder"])
    modules = [m for m in re.findall(r"(\S+\.py): return", issue)]
    parts = [modules[i :: len(coders)] for i in range(len(coders))]
    outs = await parallel(*(
        agent(name, f"{issue}\nYour part: {', '.join(part)}")
        for name, part in zip(coders, parts, strict=True) if part
    ))  # fmt: skip
    done = [o.value for o in outs if o.ok]
    patches = [d.patch.diff for d in done if d.patch]
    return {"patches": patches} if patches else {"answers": [d.text for d in done]}


EXPERIMENT = Experiment(
    name="storm-workspaces",
    tasks=interface_suite,
    run_budget={"seconds": 300},
    grader=FunctionGrader(fn=count_tests, threshold=1.0),
    sweep_from="worktree-team",
    factors={"coders": [2, 4], "workspace": ["worktree", "shared"]},
    grid=[{"coders": 2, "workspace": "shared"}, {"coders": 4, "workspace": "worktree"},
          {"coders": 4, "workspace": "shared"}],
    arms=[
        Arm(name="single", flow=solo_fix, demo=coder_model, reference=True, note="one coder"),
        Arm(name="worktree-team", flow=team_fix, demo=coder_model, controller="workflow",
            factors=Factors(workspace="worktree", instances={"coder": 2}),
            note="two coders in worktrees, merged at the end"),
    ],
)  # fmt: skip
