"""The three organizations the example compares, over one bug report each.

- `single_fix`: one Coder works the task to completion (the reference).
- `duo_fix`: a Workflow: code asks coder_a, then coder_b, each in its own worktree with its own
  brief, and delivers coder_a's patch when it says the tests pass, else coder_b's.
- `team_fix`: a Team: the Adopter leads, and the model decides whether to hand the work to the
  two Coders with `message_agent`. Its role card's closing section is what the two Team arms
  vary (OpenCollab's optional and mandatory cards).

Every run works in its own checkout of the task's repository (the experiment gives it as the
run's `repo`).
"""

from __future__ import annotations

from swarmflow import Agent, Team, agent, flow, team
from swarmflow.core.patch import Patch

CODE = ("read_file", "edit", "run_shell")
TEST_HINT = "Run the tests with `python -m pytest -q`."


def brief(issue: str, task_id: str, repeat: int) -> str:
    """What a Coder (or the Adopter) is given; the tag names the task and the run."""
    return (
        f"[task {task_id} run {repeat}] {issue} Fix it in the source, not in the tests. {TEST_HINT}"
    )


def _coder(name: str, workspace: str) -> Agent:
    return Agent(
        name,
        card="cards/coder.md.j2",
        tools=(*CODE, "submit"),
        workspace=workspace,
        max_steps=12,
        allowance=60_000,
        description="Fixes the bug it is told about and says whether the tests pass.",
    )


SINGLE = Team(agents=[_coder("coder", "local")])


@flow(team=SINGLE)
async def single_fix(issue: str, task_id: str, repeat: int = 1) -> str:
    """One Coder, to completion; its product is the checkout as it leaves it."""
    out = await agent("coder", brief(issue, task_id, repeat))
    return out.text


DUO = Team(agents=[_coder("coder_a", "worktree"), _coder("coder_b", "worktree")])


@flow(team=DUO)
async def duo_fix(issue: str, task_id: str, repeat: int = 1) -> Patch | None:
    """Two Coders, one after the other, each with its own brief; code picks the patch."""
    first = await agent("coder_a", brief(issue, task_id, repeat))
    second = await agent("coder_b", brief(issue, task_id, repeat))
    if first.patch and "tests pass" in first.text.lower():
        return first.patch
    return second.patch or first.patch


CODERS = [
    Agent(name, card="cards/coder.md.j2", tools=CODE, workspace="local", max_steps=12,
          allowance=60_000, description="Fixes the bug you describe and says if the tests pass.")
    for name in ("coder_a", "coder_b")
]  # fmt: skip
TEAM = Team(
    agents=[
        Agent("adopter", card="cards/adopter_optional.md.j2",
              tools=("message_agent", *CODE, "submit"), workspace="local", max_steps=30,
              allowance=24_000),
        *CODERS,
    ],
    edges=[("adopter", "coder_a"), ("adopter", "coder_b")],
)  # fmt: skip


@flow(team=TEAM)
async def team_fix(issue: str, task_id: str, repeat: int = 1) -> str:
    """The Adopter leads; whether it delegates is the model's choice, measured as adherence."""
    result = await team(brief(issue, task_id, repeat), lead="adopter")
    return result.answer
