"""Two calls in one worktree, killed with SIGKILL while the second is in flight
(tests/durable/test_worktree_restart.py).

`python worktree_kill_target.py RUNS_ROOT REPO`: the coder's first call writes `one.txt` and
commits it; the second call works in the same worktree (`workspace=` the first), writes
`half.txt`, and then prints READY and hangs at its next model call until the parent kills it.
"""

from __future__ import annotations

import sys

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.testing import FunctionModel, tool_call

CODER = Team([Agent("coder", tools=["write_file"], workspace="worktree")])
FIRST, SECOND = "write one.txt", "write two.txt"


@flow(team=CODER)
async def two_calls_one_worktree() -> str:
    first = await agent("coder", FIRST)
    second = await agent("coder", SECOND, workspace=first)
    return second.text


def answered(request: ModelRequest) -> bool:
    """Whether the call's tool already ran (the request holds its result)."""
    return request.messages[-1].role == "tool"


def killed_in_the_second_call() -> FunctionModel:
    async def policy(request: ModelRequest) -> str | ToolCall:
        if request.prompt == FIRST:
            if answered(request):
                return "wrote one.txt"
            return tool_call("write_file", path="one.txt", content="one\n")
        if answered(request):
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return tool_call("write_file", path="half.txt", content="half-made\n")

    return FunctionModel(policy)


if __name__ == "__main__":
    runs_root, repo = sys.argv[1], sys.argv[2]
    model = killed_in_the_second_call()
    anyio.run(lambda: run(two_calls_one_worktree, model=model, runs_root=runs_root, repo=repo))
