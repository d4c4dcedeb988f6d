"""The flagship flow killed with SIGKILL mid-run (tests/flows/test_durable_flagship.py).

`python flagship_kill_target.py ROOT AGENT`: makes the demo target repository in ROOT/target,
runs the flagship on it with the demo policy, and hangs (printing READY) until the parent kills
the process, at the first model call of AGENT that follows a tool call of its own: the agent
call in flight has then settled a model call, whichever branch the scheduler ran first.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from swarmflow.core.messages import ModelRequest
from swarmflow.flows import DEMO_TASK, create_target, solve
from swarmflow.flows.demo import Reply, policy
from swarmflow.testing import FunctionModel


def hanging(agent: str) -> FunctionModel:
    async def play(req: ModelRequest) -> Reply:
        if req.agent == agent and req.messages[-1].role == "tool":
            print("READY", flush=True)
            await anyio.sleep(3600)
        return policy(req)

    return FunctionModel(play)


async def main(root: Path, agent: str) -> None:
    target = await create_target(root / "target")
    await solve(target, DEMO_TASK, model=hanging(agent), runs_root=root / "runs", human=[])


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
