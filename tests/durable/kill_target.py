"""A run killed with SIGKILL mid-flight (tests/record/test_events.py, tests/durable/test_durable_runs.py).

`python kill_target.py RUNS_ROOT [HANG_AT [swarm]]`: the HANG_AT-th model call prints READY and
hangs until the parent kills the process. Every other call answers from its prompt alone, so an
uninterrupted run and a resumed one must return the same output. With `swarm`, the flow is
`busy.swarm` beside this file instead of the Python flow `busy`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from swarmflow import Agent, Team, agent, flow, parallel, run
from swarmflow.core.messages import ModelRequest
from swarmflow.core.outcomes import Ok
from swarmflow.runtime.flow import Flow
from swarmflow.testing import FunctionModel, Step

BRANCHES = 25
calls = 0


def answer(req: ModelRequest) -> str:
    """The answer to a request, a function of its prompt alone."""
    prompt = req.messages[-1].content or ""
    return f"done({prompt}) " + "word " * 10


def hanging_policy(hang_at: int) -> FunctionModel:
    async def policy(req: ModelRequest) -> Step | str:
        global calls
        calls += 1
        if calls == hang_at:
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return answer(req)

    return FunctionModel(policy)


async def _branch(i: int) -> str:
    """Two calls in one branch: the second is sent what the first returned."""
    first = await agent("w", f"task {i}")
    second = await agent("w", f"check {first.text[:20]}")
    return f"{i}:{second.text[:30]}"


@flow(team=Team([Agent("w")]))
async def busy() -> list[str]:
    outcomes = await parallel(_branch, n=BRANCHES, limit=4)
    return [o.value if isinstance(o, Ok) else repr(o) for o in outcomes]


SWARM = Path(__file__).with_name("busy.swarm")


def swarm_flow() -> Flow[..., object]:
    from swarmflow.dsl import load_flow

    made: Flow[..., object] = load_flow(SWARM)
    return made


if __name__ == "__main__":
    hang = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    chosen = swarm_flow() if sys.argv[3:] == ["swarm"] else busy
    anyio.run(lambda: run(chosen, model=hanging_policy(hang), runs_root=sys.argv[1]))
