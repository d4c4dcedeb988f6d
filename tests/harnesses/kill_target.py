"""A run killed with SIGKILL at a known point (tests/harnesses/test_lifecycle.py).

`python kill_target.py MODE RUNS_ROOT REPO MARKER`:
- `in_harness` (`in_harness_host`: without the sandbox): the coder's harness starts a
  detached child and asks its model, whose policy prints READY (the parent kills us then)
  while both processes sleep;
- `after_harness`: the coder's harness finishes its work; the reviewer's model call prints
  READY and hangs until the parent kills us;
- `mid_harness`: the coder's harness writes a half-done `app.py` into its worktree, and its
  second model call prints READY and hangs: the call is in flight when we are killed.
"""

from __future__ import annotations

import sys

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.harnesses import Harness
from swarmflow.testing import FunctionModel
from tests.harnesses.programs import command


def team(mode: str, marker: str) -> Team:
    sleeping = mode.startswith("in_harness")
    program = command("sleeper", marker) if sleeping else command("coder", "{task}")
    coder = Agent(
        "coder",
        workspace="worktree",
        sandbox="none" if mode.endswith("_host") else "auto",
        harness=Harness(command=program, task="stdin" if sleeping else "argument"),
    )
    return Team([coder, Agent("reviewer")], edges=[("coder", "reviewer")])


def code_and_review(mode: str, marker: str) -> object:
    @flow(team=team(mode, marker), name="code_and_review")
    async def code_and_review() -> str:
        made = await agent("coder", "make answer() return 42")
        review = await agent("reviewer", made.patch)
        return f"{made.text} / {review.text}"

    return code_and_review


def coder_answer(request: ModelRequest) -> str:
    if request.prompt == "summarise":
        return "answer() returns 42"
    return "def answer():\n    return 42\n"


def coder_answer2(request: ModelRequest) -> str:
    """The coder's answers, and the reviewer's."""
    return coder_answer(request) if request.agent == "coder" else "approve"


HALF_DONE = "def answer():\n    return 0  # half done\n"


def killed_policy(mode: str) -> FunctionModel:
    async def policy(request: ModelRequest) -> str:
        if mode == "mid_harness":
            if request.prompt != "summarise":
                return HALF_DONE
        elif request.agent == "coder" and "ready" not in request.prompt:
            return coder_answer(request)
        print("READY", flush=True)  # the parent kills us once it reads this
        await anyio.sleep(3600)
        return "never"

    return FunctionModel(policy)


if __name__ == "__main__":
    mode, runs_root, repo, marker = sys.argv[1:5]
    flow_ = code_and_review(mode, marker)
    anyio.run(lambda: run(flow_, model=killed_policy(mode), runs_root=runs_root, repo=repo))  # type: ignore[arg-type]
