"""A board run killed with SIGKILL mid-flight (test_board_journal.py).

`python board_kill_target.py RUNS_ROOT HANG_AT`: the lead opens a thread and mentions the
coder; the coder waits for the mention and answers with it; then the coder looks again. The
model call named HANG_AT ("coder-answer" or "coder-again") prints READY and hangs until the
parent kills the process. The agents use the board through its three tools, in real sessions.
"""

from __future__ import annotations

import sys

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step, tool_call

REQUEST = "please fix the parser"
BOARD_TOOLS = ("create_thread", "send_message", "wait_for_mention", "submit")

TEAM = Team(
    [Agent("lead", tools=BOARD_TOOLS), Agent("coder", tools=BOARD_TOOLS)],
    edges=[("lead", "coder"), ("coder", "lead")],
)


def _tool_results(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def policy(hang_at: str) -> FunctionModel:
    async def answer(request: ModelRequest) -> Step | str:
        results = _tool_results(request)
        prompt = next(m.content or "" for m in request.messages if m.role == "user")
        if request.agent == "lead":
            steps = [
                tool_call("create_thread", name="plan", participants=["coder"]),
                tool_call("send_message", thread="plan", content=REQUEST, mentions=["coder"]),
            ]
            return Step(tool_calls=(steps[len(results)],)) if len(results) < 2 else "asked"
        if not results:
            timeout = 0 if prompt == "anything else?" else 30
            return Step(tool_calls=(tool_call("wait_for_mention", timeout=timeout),))
        name = "coder-again" if prompt == "anything else?" else "coder-answer"
        if name == hang_at:
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return "heard: " + " / ".join(results[-1].splitlines()[:5])

    return FunctionModel(answer)


@flow(team=TEAM)
async def board_flow() -> list[str]:
    await agent("lead", "open the plan")
    first = await agent("coder", "wait for work")
    again = await agent("coder", "anything else?")
    return [first.text, again.text]


if __name__ == "__main__":
    anyio.run(lambda: run(board_flow, model=policy(sys.argv[2]), runs_root=sys.argv[1]))
