"""A session told messages between its turns, killed with SIGKILL at its last turn
(tests/durable/test_tell_resume.py).

`python tell_kill_target.py RUNS_ROOT`: the judge's second model call (the ask that follows
the told answers) prints READY and hangs until the parent kills the process.
"""

from __future__ import annotations

import sys

import anyio
from pydantic import BaseModel

from swarmflow import Agent, Team, agent_session, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel

BRIEF = "brief: the answers are about sorting"
ANSWERS = ["answer 1: merge sort", "answer 2: a heap"]
QUESTION = "Pick the best answer."


class Pick(BaseModel):
    choice: int


@flow(team=Team([Agent("judge")]))
async def judged() -> Pick:
    async with agent_session("judge") as judge:
        await judge.tell(BRIEF)  # told before a turn the journal records
        await judge.send("answer 0: bubble sort")
        for answer in ANSWERS:  # told after it, before the ask the kill interrupts
            await judge.tell(answer)
        pick: Pick = await judge.ask(QUESTION, output=Pick)
        return pick


def answer(req: ModelRequest) -> str:
    return '{"choice": 2}' if QUESTION in (req.messages[-1].content or "") else "heard"


def hanging() -> FunctionModel:
    async def policy(req: ModelRequest) -> str:
        if QUESTION in (req.messages[-1].content or ""):
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return answer(req)

    return FunctionModel(policy)


if __name__ == "__main__":
    anyio.run(lambda: run(judged, model=hanging(), runs_root=sys.argv[1]))
