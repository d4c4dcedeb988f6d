"""A batch killed with SIGKILL mid-flight (tests/batches/test_local_batch.py).

`python batch_target.py OUT HANG_TASK`: runs `solve` over TASKS tasks; the second model call of
task HANG_TASK prints READY and hangs until the parent kills the process. Every other call
answers from its prompt alone, so a batch that was killed and then run again must end with the
same results as one that was never interrupted.

`python batch_target.py OUT HANG_TASK FLAG`: retries the failed tasks of a `flaky` batch
(`retry_failed=True`) over `flaky_tasks(FLAG)`, hanging the same way.

`python batch_target.py stall-line OUT TASK [fail]`: the same batch, but every call answers;
task TASK's run ends (it fails, with `fail`), and just before its result line is written the
process prints READY and blocks until it is killed: a kill between a run's end and its line.

`python batch_target.py run RUNS RUN_ID TASK`: one run of `solve` (not a batch) as `RUN_ID`
under RUNS, whose second call prints READY and hangs: a live run in a batch's run directory.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.batches import batch, results
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel

TASKS = 40
STALL_TASKS = 12
"""The tasks of a `stall-line` batch."""


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


@flow(team=Team([Agent("w")]))
async def flaky(n: int, flag: str = "") -> str:
    """`solve`'s two calls, failing between them while the file `flag` exists: a fault that
    passes, so a retry that resumes the task replays the first call and makes the second."""
    first = await agent("w", f"task {n}")
    if flag and await anyio.Path(flag).exists():
        raise ValueError(f"task {n} met the flag {flag}")
    second = await agent("w", f"check {n}: {first.text[:12]}")
    return second.text[:24]


def flaky_tasks(flag: str, count: int = TASKS) -> list[dict[str, object]]:
    """Every odd task watches the flag."""
    return [{"n": n, "flag": flag if n % 2 else ""} for n in range(count)]


def hanging(hang_task: int) -> FunctionModel:
    async def policy(req: ModelRequest) -> str:
        if req.prompt.startswith(f"check {hang_task}:"):
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return answer(req)

    return FunctionModel(policy)


def stall_before_the_line_of(task: int) -> None:
    """Block this process, once task `task`'s run has ended, before its line is written."""
    write = results.ResultsWriter.write

    def stalling(self: results.ResultsWriter, result: results.TaskResult) -> Any:
        if result.input.get("n") == task:
            print("READY", flush=True)  # the parent kills us once it reads this
            threading.Event().wait()
        return write(self, result)

    results.ResultsWriter.write = stalling  # type: ignore[method-assign]


async def _main(out: str, hang: int, flag: str | None) -> None:
    if flag is None:
        await batch(solve, task_list(), out=out, concurrency=4, model=hanging(hang))
    else:
        await batch(flaky, flaky_tasks(flag), out=out, concurrency=4, model=hanging(hang),
                    retry_failed=True)  # fmt: skip


def _cli(argv: list[str]) -> None:
    if argv[0] == "stall-line":
        task = int(argv[2])
        stall_before_the_line_of(task)
        tasks = task_list(STALL_TASKS, failing=task if argv[3:] == ["fail"] else None)
        anyio.run(
            lambda: batch(solve, tasks, out=argv[1], concurrency=4, model=FunctionModel(answer))
        )
    elif argv[0] == "run":
        n = int(argv[3])
        anyio.run(lambda: run(solve, n=n, run_id=argv[2], runs_root=argv[1], model=hanging(n)))
    else:
        anyio.run(_main, argv[0], int(argv[1]), (argv[2:] or [None])[0])


if __name__ == "__main__":
    _cli(sys.argv[1:])
