"""A batch killed with SIGKILL mid-flight (tests/batches/test_local_batch.py).

`python batch_target.py OUT HANG_TASK`: runs `solve` over TASKS tasks; the second model call of
task HANG_TASK prints READY and hangs until the parent kills the process. Every other call
answers from its prompt alone, so a batch that was killed and then run again must end with the
same results as one that was never interrupted.
"""

from __future__ import annotations

import sys

import anyio

from swarmflow import Agent, Team, agent, flow
from swarmflow.batches import batch
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel

TASKS = 40


def answer(req: ModelRequest) -> str:
    """The answer to a request, a function of its prompt alone."""
    return f"done({req.prompt}) " + "word " * 5


@flow(team=Team([Agent("w")]))
async def solve(n: int, fail: bool = False) -> str:
    """Two calls: the second is sent what the first returned; `fail` raises after them."""
    first = await agent("w", f"task {n}")
    second = await agent("w", f"check {n}: {first.text[:12]}")
    if fail:
        raise ValueError(f"task {n} was told to fail")
    return second.text[:24]


def task_list(count: int = TASKS, failing: int | None = None) -> list[dict[str, object]]:
    return [{"n": n, "fail": n == failing} for n in range(count)]


def hanging(hang_task: int) -> FunctionModel:
    async def policy(req: ModelRequest) -> str:
        if req.prompt.startswith(f"check {hang_task}:"):
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return answer(req)

    return FunctionModel(policy)


if __name__ == "__main__":
    out, hang = sys.argv[1], int(sys.argv[2])
    anyio.run(lambda: batch(solve, task_list(), out=out, concurrency=4, model=hanging(hang)))
