"""OpenCollab's cross-harness table: an outside agent program and native organizations on the
same tasks, with tokens, cost and cache hits, and the Duo against the Base by task.

    swarmflow experiment run examples/seeds/cross_harness.py:EXPERIMENT --demo --out harness
    swarmflow experiment report harness --html harness/report.html

- `mini-swe-agent`: mini-swe-agent alone, in place of the native coder (the arm's `harness`
  factor on the Base flow): its model calls go through the run's metering endpoint, so they are
  budgeted and counted as a native agent's are. Left out, with a line saying so, when
  mini-swe-agent is not installed (`pip install 'swarmflow[harness]'`);
- `base` (the reference): one native coder;
- `duo`: a native two-agent workflow: the coder, then a reviewer who reads and fixes.

The "vs ref" column of the duo is OpenCollab's Table 9: Duo against Base, paired by task, with
the exact sign test. Cache hits are the cached share of the prompt tokens where the server
reports cached tokens (`n/r` where it reports none, as the scripted `--demo` policies do).
"""

from __future__ import annotations

import importlib.util
import sys

from harness_scripted import harness_model
from seed_grading import count_tests
from seed_suites import coding_suite

from swarmflow import Agent, Team, agent, flow
from swarmflow.experiments import Arm, Experiment, Factors, FunctionGrader
from swarmflow.harnesses import mini_swe_agent

CODE = ("read_file", "edit", "list_files")


@flow(team=Team([Agent("coder", tools=CODE, workspace="local", max_steps=12)]))
async def base(issue: str) -> str:
    """One native coder."""
    return (await agent("coder", issue)).text


@flow(team=Team([Agent("coder", tools=CODE, workspace="local", max_steps=12),
                 Agent("reviewer", tools=CODE, workspace="local", max_steps=12)],
                edges=[("coder", "reviewer")]))  # fmt: skip
async def duo(issue: str) -> str:
    """The coder, then a reviewer who reads its work in the same checkout and fixes a slip."""
    done = await agent("coder", issue)
    return (
        await agent("reviewer", f"Review the fix of: {issue}\nThe coder said: {done.text}")
    ).text


HAS_MINI = importlib.util.find_spec("minisweagent") is not None
ARMS = [
    Arm(name="base", flow=base, demo=harness_model, reference=True, note="one native coder"),
    Arm(name="duo", flow=duo, demo=harness_model, controller="workflow",
        note="native coder, then a reviewer"),
]  # fmt: skip
if HAS_MINI:
    ARMS.insert(0, Arm(name="mini-swe-agent", flow=base, demo=harness_model,
                       factors=Factors(harness={"coder": mini_swe_agent(step_limit=10)}),
                       note="mini-swe-agent through the metering endpoint"))  # fmt: skip
else:
    print("cross_harness: mini-swe-agent is not installed (pip install 'swarmflow[harness]'): "
          "its arm is left out", file=sys.stderr)  # fmt: skip

EXPERIMENT = Experiment(
    name="cross-harness",
    tasks=coding_suite,
    run_budget={"seconds": 900},  # mini-swe-agent's own start-up takes a while on a busy machine
    grader=FunctionGrader(fn=count_tests, threshold=1.0),
    arms=ARMS,
)
