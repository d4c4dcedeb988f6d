"""An agent call killed with SIGKILL after some of its model calls have settled
(tests/durable/test_model_call_resume.py).

`python model_calls_kill_target.py MODE RUNS_ROOT REPO`:
- `tools`: a native session reads four files, one a step, then answers: five model calls;
  the fourth prints READY and hangs until the parent kills the process;
- `summary`: the same session under a small context budget, so that its history is summarised
  (a model-written summary) before the fifth call, which hangs;
- `harness`: a harness program asks its model for code, then for a summary; the second call
  hangs;
- `reflection`: the `tools` session, then a checker's one-call session, with experience on
  (`experience.db` beside the runs root): the run's end reflects on each agent in turn, and the
  checker's reflection, the second, hangs.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.experience.reflect import REFLECT_PROMPT
from swarmflow.harnesses import Harness
from swarmflow.runtime.flow import Flow
from swarmflow.testing import FunctionModel, tool_call
from tests.harnesses.programs import command

FILES = 4
HANG_AT = 4
"""The native session's model call that hangs (three have settled)."""
TASK = "Read f1.txt to f4.txt, one at a time, then say what they hold."
CONTEXT_TOKENS = 2_400
_FILE = re.compile(r"file (\d+) of")


def make_files(root: str) -> None:
    """The files the session reads: each says which it is, padded to press on the budget."""
    for i in range(1, FILES + 1):
        padding = " ".join(f"word{n}" for n in range(220))
        with open(f"{root}/f{i}.txt", "w") as fh:
            fh.write(f"file {i} of {FILES}: {padding}\n")


def team(mode: str, summariser: FunctionModel) -> Team:
    if mode == "harness":
        program = Harness(command=command("coder", "{" + "task}"), task="argument")
        return Team([Agent("worker", workspace="local", sandbox="none", harness=program)])
    context = None
    if mode == "summary":
        context = ContextPolicy(processors=("summarise", "drop_oldest"), summariser=summariser,
                                keep_recent=2, summary_tokens=200)  # fmt: skip
    worker = Agent("worker", tools=["read_file"], workspace="local", context=context)
    if mode == "reflection":
        return Team([worker, Agent("checker")], edges=[("worker", "checker")])
    return Team([worker])


def work(mode: str, summariser: FunctionModel) -> Flow[..., Any]:
    @flow(team=team(mode, summariser), name="work")
    async def work_flow() -> str:
        found = (await agent("worker", TASK)).text
        if mode == "reflection":
            return found + " / " + (await agent("checker", f"Check: {found}")).text
        return found

    return work_flow


def last_file(request: ModelRequest) -> int:
    """The number of the last file the session read (0 before the first)."""
    for message in reversed(list(request.messages)):
        found = _FILE.search(message.content or "") if message.role == "tool" else None
        if found:
            return int(found.group(1))
    return 0


def answer(request: ModelRequest) -> str | ToolCall:
    """What the worker's model answers, the same in every process."""
    if request.prompt == "summarise":
        return "the program wrote app.py"
    if request.system == REFLECT_PROMPT:
        return f"note: {request.agent} read the files f1.txt to f4.txt"
    if request.agent == "checker":
        return "checked"
    if not request.tools:  # the harness program's first request
        return "print(42)\n"
    read = last_file(request)
    if read >= FILES:
        return "they count from one to four"
    return tool_call("read_file", path=f"f{read + 1}.txt")


def summary(request: ModelRequest) -> str:
    return f"- Facts found: files read so far ({len(str(request.messages[-1].content))} chars)"


def hangs_at(mode: str, request: ModelRequest) -> bool:
    if mode == "harness":
        return request.prompt == "summarise"
    if mode == "reflection":  # reflections run one after the other: the worker's has settled
        return request.system == REFLECT_PROMPT and request.agent == "checker"
    # Under the small budget the history is summarised before the fifth call: that one hangs.
    hang_at = FILES + 1 if mode == "summary" else HANG_AT
    return bool(request.tools) and last_file(request) == hang_at - 1


def killed_model(mode: str) -> FunctionModel:
    async def policy(request: ModelRequest) -> str | ToolCall:
        if hangs_at(mode, request):
            print("READY", flush=True)  # the parent kills us once it reads this
            await anyio.sleep(3600)
        return answer(request)

    return FunctionModel(policy, name="worker-model")


async def main(mode: str, runs_root: str, repo: str) -> None:
    summariser = FunctionModel(summary, name="summariser")
    await run(work(mode, summariser), model=killed_model(mode), runs_root=runs_root, repo=repo,
              context_tokens=CONTEXT_TOKENS, experience=experience_of(mode, runs_root))  # fmt: skip


def experience_of(mode: str, runs_root: str) -> str | None:
    """The experience store a mode's run uses: beside its runs root, for `reflection` only."""
    return f"{runs_root}.experience.db" if mode == "reflection" else None


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
