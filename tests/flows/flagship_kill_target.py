"""The flagship flow killed with SIGKILL mid-run (tests/flows/test_durable_flagship.py).

`python flagship_kill_target.py ROOT HANG_AT`: makes the demo target repository in ROOT/target,
runs the flagship on it with the demo policy, and hangs at the HANG_AT-th model call (printing
READY) until the parent kills the process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from swarmflow.core.messages import ModelRequest
from swarmflow.flows import DEMO_TASK, create_target, solve
from swarmflow.flows.demo import Reply, policy
from swarmflow.testing import FunctionModel

calls = 0


def hanging(hang_at: int) -> FunctionModel:
    async def play(req: ModelRequest) -> Reply:
        global calls
        calls += 1
        if calls == hang_at:
            print("READY", flush=True)
            await anyio.sleep(3600)
        return policy(req)

    return FunctionModel(play)


async def main(root: Path, hang_at: int) -> None:
    target = await create_target(root / "target")
    await solve(target, DEMO_TASK, model=hanging(hang_at), runs_root=root / "runs", human=[])


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]))
