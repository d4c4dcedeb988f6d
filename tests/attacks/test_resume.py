"""Resume under attack: what a process did before it died is neither paid twice nor lost.

Each test fails a run at a known point (the flow's own code raises, or a deadline fires),
resumes it through `run(..., resume=...)`, and reads what the second process did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, RunResult, Team, agent, agent_session, flow, run
from swarmflow.core.errors import ModelError
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step, tool_call
from tests.attacks.conftest import run_git


def of_type(result: RunResult, kind: str) -> list[Any]:
    return [e for e in result.events if e.type == kind]


# -- the wall clock counts every process's time ------------------------------------------------

LIMITED = Team([Agent("worker")])


@flow(team=LIMITED, budget={"seconds": 0.3})
async def limited() -> str:
    return (await agent("worker", "work")).text


async def test_a_resume_does_not_get_the_wall_clock_afresh(tmp_path: Path) -> None:
    async def stuck(request: ModelRequest) -> str:
        await anyio.Event().wait()  # never answers: the run's 0.3 s run out
        return "unreachable"

    first = await run(limited, model=FunctionModel(stuck), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and "wall-clock" in str(first.error)
    assert first.run_dir is not None
    quick = FunctionModel(lambda request: "done")
    again = await run(limited, model=quick, resume=first.run_dir, raise_on_failure=False)
    # The first process used the whole 0.3 s: the resumed one has none of it left.
    assert again.status == "failed" and "wall-clock" in str(again.error)
    assert quick.requests == []


# -- a session's worktree is the one its replayed turns edited ----------------------------------

CODER = Team([Agent("coder", tools=["write_file", "read_file"], workspace="worktree")])
broken = [True]


@flow(team=CODER)
async def two_turns() -> str:
    async with agent_session("coder") as coder:
        await coder.send("write the note")
        if broken[0]:
            raise RuntimeError("the flow's own code failed between the turns")
        return str(await coder.send("read the note"))


def _since_prompt(request: ModelRequest) -> list[str]:
    """The tool results since the latest user message."""
    messages = list(request.messages)
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    return [m.content or "" for m in messages[last_user:] if m.role == "tool"]


def _coder(request: ModelRequest) -> object:
    results = _since_prompt(request)
    if results:
        return "read: " + results[-1]
    if request.prompt == "write the note":
        return tool_call("write_file", path="note.txt", content="kept")
    return tool_call("read_file", path="note.txt")


async def test_a_resumed_session_works_on_in_the_worktree_its_turns_edited(
    tmp_path: Path, repo: Path
) -> None:
    broken[0] = True
    first = await run(two_turns, model=FunctionModel(_coder), runs_root=tmp_path, repo=repo,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    again = await run(two_turns, model=FunctionModel(_coder), resume=first.run_dir, repo=repo,
                      raise_on_failure=False)  # fmt: skip
    assert again.status == "ok", again.error
    assert "kept" in again.output  # the note the replayed turn wrote is still there
    assert len(of_type(again, "call_replayed")) == 1


# -- every worktree of a run forks from the commit the run started from ------------------------

CODERS = Team([Agent("coder", tools=["write_file"], workspace="worktree")])


@flow(team=CODERS)
async def two_coders() -> list[str]:
    first = await agent("coder", "write one.txt")
    if broken[0]:
        raise RuntimeError("the flow's own code failed between the calls")
    second = await agent("coder", "write two.txt")
    assert first.patch is not None and second.patch is not None
    return [first.patch.base, second.patch.base]


def _writer(request: ModelRequest) -> object:
    if _since_prompt(request):
        return "written"
    return tool_call("write_file", path=request.prompt.split()[-1], content="x\n")


async def test_a_resumed_run_forks_new_worktrees_from_the_runs_own_base(
    tmp_path: Path, repo: Path
) -> None:
    broken[0] = True
    first = await run(two_coders, model=FunctionModel(_writer), runs_root=tmp_path, repo=repo,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    started_at = run_git(repo, "rev-parse", "HEAD").strip()
    (repo / "later.txt").write_text("someone committed while the run was down\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "later")
    broken[0] = False
    again = await run(two_coders, model=FunctionModel(_writer), resume=first.run_dir, repo=repo,
                      raise_on_failure=False)  # fmt: skip
    assert again.status == "ok", again.error
    assert again.output == [started_at, started_at]


# -- a message_agent answer is not paid twice when its sender's call restarts -------------------

MESSAGING = Team(
    [Agent("lead", tools=["message_agent"]), Agent("helper")], edges=[("lead", "helper")]
)


@flow(team=MESSAGING)
async def ask_helper() -> str:
    return (await agent("lead", "ask the helper")).text


def _messaging(lead_dies: bool) -> FunctionModel:
    def answer(request: ModelRequest) -> object:
        if request.agent == "helper":
            return "the helper's answer"
        results = _since_prompt(request)
        if not results:
            return tool_call("message_agent", to="helper", text="what is it?")
        if lead_dies:
            return Step(error=ModelError("the lead's model went away"))
        return "lead heard: " + results[-1]

    return FunctionModel(answer)


async def test_a_restarted_sender_gets_the_answer_it_paid_for(tmp_path: Path) -> None:
    first = await run(ask_helper, model=_messaging(lead_dies=True), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    model = _messaging(lead_dies=False)
    again = await run(ask_helper, model=model, resume=first.run_dir, raise_on_failure=False)
    assert again.status == "ok", again.error
    assert again.output == "lead heard: the helper's answer"
    # The lead's first model call (its message_agent) had settled: replayed at 0 tokens; the
    # helper is not asked again; only the lead's call that died is asked.
    assert [r.agent for r in model.requests] == ["lead"]
