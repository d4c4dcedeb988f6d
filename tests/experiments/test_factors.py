"""Arm factors change the run itself, and adherence reads each one back from the run's log.

Every test runs one small experiment whose arms differ in one factor only, set on the arm
(the flow is the same object in both), and checks the events the factor leaves and the
`factors` column adherence takes from them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow, parallel, team
from swarmflow.core.messages import ModelRequest
from swarmflow.experiments import (
    Arm,
    Experiment,
    Factors,
    FunctionGrader,
    read_experiment,
    run_experiment,
)
from swarmflow.harnesses import Harness
from swarmflow.rails import GoalView
from swarmflow.testing import FunctionModel, tool_call
from tests.experiments.conftest import make_repo, write_tasks
from tests.harnesses.programs import command

BOARD = ("create_thread", "send_message")
WORKERS = ("w1", "w2")
GRADER = FunctionGrader(fn=lambda task, result: result.status == "ok")


def _events(run_dir: str, kind: str) -> list[dict[str, Any]]:
    lines = Path(run_dir, "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def _experiment(tmp_path: Path, arms: list[Arm], *, repo: bool = False, tasks: int = 1) -> Any:
    line: dict[str, Any] = {"inputs": {"task": "do it"}}
    if repo:
        line["repo"] = str(make_repo(tmp_path / "repo"))
    path = write_tasks(tmp_path / "tasks.jsonl",
                       [{"id": f"t{i}", **line} for i in range(1, tasks + 1)])  # fmt: skip
    experiment = Experiment(name="factor", tasks=path, grader=GRADER, arms=arms, concurrency=1)
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    report = read_experiment(out)
    return {a.name: a.rows for a in report.arms}


# listening: blocking receive or passive awareness -------------------------------------------


@flow(team=Team([Agent("assembler", tools=[*BOARD, "submit"]),
                 *(Agent(w, tools=BOARD) for w in WORKERS)],
                edges=[(a, b) for w in WORKERS for a, b in (("assembler", w), (w, "assembler"))]))  # fmt: skip
async def assemble(task: str) -> str:
    return (await team(task, lead="assembler")).answer


def _can_wait(request: ModelRequest) -> bool:
    return any(t.name == "wait_for_mention" for t in request.tools)


def _assembler(request: ModelRequest, quiet: bool) -> object:
    done = [m for m in request.messages if m.role == "tool"]
    if (
        quiet
        or len(done) >= 2
        and set(re.findall(r"part done by (w\d)", _text(request))) >= {*WORKERS}
    ):
        return tool_call("submit", summary="assembled")
    if not done:
        return tool_call("create_thread", name="plan", participants=list(WORKERS))
    if len(done) == 1:
        return tool_call("send_message", thread="plan", content="report your part",
                         mentions=list(WORKERS))  # fmt: skip
    return tool_call("wait_for_mention", timeout=30) if _can_wait(request) else "waiting"


def _text(request: ModelRequest) -> str:
    return "\n".join(m.content or "" for m in request.messages)


def _worker(request: ModelRequest) -> object:
    last = request.messages[-1]
    text = last.content or ""
    if last.role == "user" and "unread mention" in text and _can_wait(request):
        return tool_call("wait_for_mention", timeout=30)  # blocking: listening is a step
    if "report your part" in text and last.role in ("user", "tool"):
        return tool_call("send_message", thread="plan", content=f"part done by {request.agent}",
                         mentions=["assembler"])  # fmt: skip
    return "reported"


def _board(quiet: bool = False) -> FunctionModel:
    def policy(request: ModelRequest) -> object:
        if request.agent == "assembler":
            return _assembler(request, quiet)
        return _worker(request)

    return FunctionModel(policy, name="board-scripted")


def test_the_listening_factor_moves_where_mentions_arrive(tmp_path: Path) -> None:
    rows = _experiment(tmp_path, [
        Arm(name="blocking", flow=assemble, reference=True, demo=_board,
            factors=Factors(listening="blocking")),
        Arm(name="passive", flow=assemble, demo=_board, factors=Factors(listening="passive")),
        Arm(name="silent", flow=assemble, demo=lambda: _board(quiet=True),
            factors=Factors(listening="passive")),
    ])  # fmt: skip
    blocking, passive = rows["blocking"][0], rows["passive"][0]
    waits = [
        e for e in _events(passive.run_dir, "tool_executed") if e["tool"] == "wait_for_mention"
    ]
    assert waits == []  # passive: no step is spent waiting
    assert {e["mode"] for e in _events(passive.run_dir, "mention_delivered")} == {"passive"}
    blocked = _events(blocking.run_dir, "mention_delivered")
    assert {e["mode"] for e in blocked} == {"blocking"}
    assert any(e["tool"] == "wait_for_mention" for e in _events(blocking.run_dir, "tool_executed"))
    assert blocking.factors == passive.factors | {"listening": True} == {"listening": True}
    assert blocking.adherent and passive.adherent
    silent = rows["silent"][0]  # never heard a mention: the factor did not happen
    assert silent.factors == {"listening": False} and not silent.adherent


# workspace: worktrees or one shared workspace ------------------------------------------------

FILES = ("read_file", "write_file", "edit", "list_files")


@flow(team=Team([Agent(n, tools=FILES, workspace="local", sandbox="none") for n in "AB"]))
async def pair(task: str) -> str:
    a, b = await parallel(agent("A", task), agent("B", task))
    return f"{a.value.text} / {b.value.text}"


def _pair() -> FunctionModel:
    """A and B read pkg/calc.py; A writes it while B's write is in flight: in one shared
    workspace B's snapshot is then stale."""
    b_read, a_wrote = anyio.Event(), anyio.Event()
    steps: dict[str, int] = {}

    async def policy(request: ModelRequest) -> object:
        step = steps[request.agent] = steps.get(request.agent, 0) + 1
        if step == 1:
            return tool_call("read_file", path="pkg/calc.py")
        if request.agent == "A":
            if step == 2:
                await b_read.wait()
                return tool_call("write_file", path="pkg/calc.py", content="A = 1\n")
            a_wrote.set()
            return "A done"
        if step == 2:
            b_read.set()
            await a_wrote.wait()
            return tool_call("write_file", path="pkg/calc.py", content="B = 1\n")
        return "B done"

    return FunctionModel(policy, name="pair-scripted")


def test_the_workspace_factor_shares_one_workspace_with_stale_write_refusals(
    tmp_path: Path,
) -> None:
    rows = _experiment(tmp_path, [
        Arm(name="worktree", flow=pair, reference=True, demo=_pair,
            factors=Factors(workspace="worktree")),
        Arm(name="shared", flow=pair, demo=_pair, factors=Factors(workspace="shared")),
    ], repo=True)  # fmt: skip
    shared, worktree = rows["shared"][0], rows["worktree"][0]
    assert shared.status == worktree.status == "ok" and shared.resolved
    (start,) = _events(shared.run_dir, "run_started")
    assert {r["workspace"] for r in start["roles"].values()} == {"shared"}
    writes = {e["agent"]: e for e in _events(shared.run_dir, "tool_executed")
              if e["tool"] == "write_file"}  # fmt: skip
    assert writes["A"]["ok"] and not writes["B"]["ok"]
    assert "your view of the workspace is out of date" in json.dumps(writes["B"])
    assert [e["agent"] for e in _events(shared.run_dir, "shared_file_written")] == ["A"]
    apart = [e for e in _events(worktree.run_dir, "tool_executed") if e["tool"] == "write_file"]
    assert [e["ok"] for e in apart] == [True, True]  # each in its own worktree
    assert shared.factors == worktree.factors == {"workspace": True}


# feedback: language-server diagnostics or none ------------------------------------------------


@flow(team=Team([Agent("coder", tools=("read_file", "edit"), workspace="local",
                       sandbox="none")]))  # fmt: skip
async def fix(task: str) -> str:
    return (await agent("coder", task)).text


def _breaker() -> FunctionModel:
    steps: list[ModelRequest] = []

    def policy(request: ModelRequest) -> object:
        steps.append(request)
        if len(steps) == 1:
            return tool_call("edit", path="pkg/calc.py", old="return x + x", new="return y + x")
        return "edited"

    return FunctionModel(policy, name="breaker-scripted")


def test_the_feedback_factor_gives_the_session_diagnostics(tmp_path: Path) -> None:
    rows = _experiment(tmp_path, [
        Arm(name="off", flow=fix, reference=True, demo=_breaker, factors=Factors(feedback="off")),
        Arm(name="lsp", flow=fix, demo=_breaker,
            factors=Factors(feedback={"servers": ["ruff"], "wait": 10.0})),
    ], repo=True)  # fmt: skip
    lsp, off = rows["lsp"][0], rows["off"][0]
    posted = _events(lsp.run_dir, "diagnostics_posted")
    assert [e["codes"] for e in posted] == [["F821"]]
    assert [e["source"] for e in _events(lsp.run_dir, "evidence_delivered")] == ["diagnostics"]
    assert _events(off.run_dir, "feedback_checked") == []
    assert lsp.factors == off.factors == {"feedback": True}


# experience: a store across the arm's tasks, or none ------------------------------------------

NOTES = "worked: reading pkg/calc.py first showed the doubling\nfailed: nothing"


def _learner() -> FunctionModel:
    from swarmflow.experience.reflect import REFLECT_PROMPT

    return FunctionModel(lambda r: NOTES if r.system == REFLECT_PROMPT else "done", name="l-s")


@flow(team=Team([Agent("coder", card="You fix the doubling in pkg/calc.py.")]))
async def solo(task: str) -> str:
    return (await agent("coder", task)).text


def test_the_experience_factor_writes_and_offers_notes_across_the_arms_tasks(
    tmp_path: Path,
) -> None:
    rows = _experiment(tmp_path, [
        Arm(name="off", flow=solo, reference=True, demo=_learner,
            factors=Factors(experience="off")),
        Arm(name="fresh", flow=solo, demo=_learner, factors=Factors(experience="fresh")),
    ], tasks=2)  # fmt: skip
    fresh, off = rows["fresh"], rows["off"]
    assert (tmp_path / "out/experience/fresh.db").is_file()
    assert _events(fresh[0].run_dir, "experience_written")
    assert _events(fresh[1].run_dir, "experience_retrieved")  # the first task's notes
    assert all(not _events(r.run_dir, "experience_written") for r in off)
    assert [r.factors for r in fresh + off] == [{"experience": True}] * 4


# goals, context, instances ---------------------------------------------------------------------


def test_goal_evaluators_run_and_are_read_back(tmp_path: Path) -> None:
    def finished(view: GoalView) -> str:
        return "complete"

    rows = _experiment(tmp_path, [
        Arm(name="plain", flow=solo, reference=True, demo=_learner),
        Arm(name="goal", flow=solo, demo=_learner, factors=Factors(goals={"coder": [finished]})),
    ])  # fmt: skip
    goal = rows["goal"][0]
    assert [e["decision"] for e in _events(goal.run_dir, "goal_evaluated")] == ["complete"]
    assert _events(rows["plain"][0].run_dir, "goal_evaluated") == []
    assert goal.factors == {"goals": True} and rows["plain"][0].factors == {}


def test_context_levels_and_instances_are_what_the_run_started_with(tmp_path: Path) -> None:
    levels = {"processors": ["offload"], "high": 0.8, "low": 0.4}
    rows = _experiment(tmp_path, [
        Arm(name="one", flow=assemble, reference=True, demo=lambda: _board(quiet=True)),
        Arm(name="three", flow=assemble, demo=lambda: _board(quiet=True),
            factors=Factors(instances={"w1": 3}, context=levels)),
    ])  # fmt: skip
    three = rows["three"][0]
    (start,) = _events(three.run_dir, "run_started")
    assert start["agents"] == ["assembler", "w1", "w1_2", "w1_3", "w2"]
    assert ["assembler", "w1_3"] in start["edges"] and ["w1_2", "assembler"] in start["edges"]
    assert {tuple(r["context"]) for r in start["roles"].values()} == {
        ("offload", "cut_observations")
    }
    assert three.factors == {"context": True, "instances": True}


# harness: an outside program in place of the native agent ------------------------------------


def test_the_harness_factor_sends_the_agents_calls_through_the_endpoint(tmp_path: Path) -> None:
    program = Harness(command=command("coder", "{task}"), name="test-coder")

    def policy(request: ModelRequest) -> str:
        return "def f():\n    return 1\n" if "summarise" not in request.prompt else "wrote f"

    native = lambda: FunctionModel(policy, name="native-scripted")  # noqa: E731
    rows = _experiment(tmp_path, [
        Arm(name="native", flow=fix, reference=True, demo=native),
        Arm(name="harness", flow=fix, demo=native, factors=Factors(harness={"coder": program})),
    ], repo=True)  # fmt: skip
    harness, own = rows["harness"][0], rows["native"][0]
    (started,) = _events(harness.run_dir, "harness_started")
    assert started["harness"] == "test-coder" and started["agent"] == "coder"
    calls = _events(harness.run_dir, "model_called")
    assert len(calls) == 2 and all(c["request_shape"] is not None for c in calls)
    assert all(c.get("request_shape") is None for c in _events(own.run_dir, "model_called"))
    assert harness.factors == {"harness": True} and own.factors == {}


def test_a_factor_naming_an_unknown_agent_is_refused() -> None:
    with pytest.raises(ValueError, match="factors name coderr, which the flow 'fix' does not"):
        Arm(name="x", flow=fix, factors=Factors(instances={"coderr": 2}))


def test_a_factor_unshown_in_a_cut_run_is_unverified_and_one_unshown_in_a_finished_run_is_not(
    tmp_path: Path,
) -> None:
    """A passive arm whose lead ran out of steps before any mention: not adherent, but
    unverified (cut short before the mechanism could show); the same, finished: a deviation."""
    capped = Team([Agent("assembler", tools=[*BOARD, "submit"], max_steps=1),
                   *(Agent(w, tools=BOARD) for w in WORKERS)], edges=assemble.team.edges)  # fmt: skip

    @flow(team=capped)
    async def cut(task: str) -> str:
        return (await team(task, lead="assembler")).answer

    def stalls() -> FunctionModel:
        return FunctionModel(lambda r: tool_call("create_thread", name="plan",
                                                 participants=list(WORKERS)), name="stall-s")  # fmt: skip

    rows = _experiment(tmp_path, [
        Arm(name="finished", flow=assemble, reference=True, demo=lambda: _board(quiet=True),
            factors=Factors(listening="passive")),
        Arm(name="cut", flow=cut, demo=stalls, factors=Factors(listening="passive")),
    ])  # fmt: skip
    finished, stopped = rows["finished"][0], rows["cut"][0]
    assert finished.factors == stopped.factors == {"listening": False}
    assert stopped.end_reason != "completed"
    assert (finished.adherent, finished.unverified) == (False, False)
    assert (stopped.adherent, stopped.unverified) == (False, True)
