"""A run that is killed with SIGKILL mid-flight by tests/runtime/test_events.py."""

from __future__ import annotations

import sys

import anyio

from swarmflow import Agent, Team, agent, flow, parallel, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step

calls = 0


async def policy(req: ModelRequest) -> Step | str:
    global calls
    calls += 1
    if calls == 20:
        print("READY", flush=True)  # the parent kills us once it reads this
        await anyio.sleep(3600)
    return "answer " * 20


@flow(team=Team([Agent("w")]))
async def busy() -> object:
    return await parallel(lambda i: agent("w", f"task {i}"), n=50, limit=4)


if __name__ == "__main__":
    anyio.run(lambda: run(busy, model=FunctionModel(policy), runs_root=sys.argv[1]))
