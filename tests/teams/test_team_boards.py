"""Two teams in one run each have a board of their own: the same thread name on both, and
neither sees the other's messages or mentions, in parallel branches or one after the other,
and a resumed run gives each team its own board back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, Team, TeamResult, flow, parallel, run, team
from swarmflow.core.messages import ModelRequest
from swarmflow.record.events import parse_event
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel, tool_call
from tests.teams.board_support import cli, cli_env

BOARD = ("create_thread", "send_message", "wait_for_mention")
CREW = Team(
    [Agent("lead", tools=[*BOARD, "submit"]), Agent("coder", tools=BOARD)],
    edges=[("lead", "coder"), ("coder", "lead")],
)
BOARD_EVENTS = ("thread_created", "board_message_posted", "mention_delivered", "board_refused")
broken = [False]
GUARD = 60
"""Seconds a test's runs may take before it fails: two teams that hear each other's mentions
can wait on each other for ever (what these tests guard against)."""


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


def _lead(request: ModelRequest) -> object:
    """Opens #plan, asks the coder, and idles until a mention wakes it with the answer."""
    done = [m for m in request.messages if m.role == "user" and "done:" in (m.content or "")]
    results = [m for m in request.messages if m.role == "tool"]
    if done:
        heard = [line for line in (done[-1].content or "").splitlines() if "done:" in line]
        return tool_call("submit", summary=" | ".join(heard))
    if not results:
        return tool_call("create_thread", name="plan", participants=["coder"])
    if len(results) == 1:
        return tool_call("send_message", thread="plan", content=f"please do: {_task(request)}",
                         mentions=["coder"])  # fmt: skip
    return "waiting for the coder"


def _coder(request: ModelRequest) -> object:
    last = request.messages[-1]
    asked = [line for line in (last.content or "").splitlines() if "please do:" in line]
    if last.role == "user" and asked:
        work = " + ".join(line.split("please do:")[-1].strip() for line in asked)
        return tool_call("send_message", thread="plan", content=f"done: {work}",
                         mentions=["lead"])  # fmt: skip
    return "reported"


def _policy(request: ModelRequest) -> object:
    return _lead(request) if request.agent == "lead" else _coder(request)


@flow(team=CREW)
async def side_by_side() -> list[str]:
    outcomes = await parallel(lambda i: team(("alpha", "beta")[i], lead="lead"), n=2)
    answers = [o.value.answer for o in outcomes]  # type: ignore[union-attr]
    if broken[0]:
        raise RuntimeError("the flow's own code failed after the teams")
    return answers


def _board_events(events: list[Any]) -> list[Any]:
    return [e for e in events if e.type in BOARD_EVENTS]


async def test_two_parallel_teams_with_one_thread_name_each_see_their_own() -> None:
    broken[0] = False
    with anyio.fail_after(GUARD):
        result = await run(side_by_side, model=FunctionModel(_policy))
    assert result.output == ["done: alpha", "done: beta"]
    created = [e for e in result.events if e.type == "thread_created"]
    assert [(e.thread, e.board) for e in created] == [
        ("plan", "parallel[0]/team[0]"),
        ("plan", "parallel[1]/team[0]"),
    ]
    for event in _board_events(result.events):  # each team's traffic on its own board only
        assert event.board == f"{event.branch}/team[0]", event
    posted = {(e.board, e.text) for e in result.events if e.type == "board_message_posted"}
    assert posted == {
        ("parallel[0]/team[0]", "please do: alpha"),
        ("parallel[0]/team[0]", "done: alpha"),
        ("parallel[1]/team[0]", "please do: beta"),
        ("parallel[1]/team[0]", "done: beta"),
    }


def _snapshot_lead(request: ModelRequest) -> object:
    """Opens #plan, asks the coder and waits on the board; submits what the board shows."""
    results = [m.content or "" for m in request.messages if m.role == "tool"]
    if not results:
        return tool_call("create_thread", name="plan", participants=["coder"])
    if len(results) == 1:
        return tool_call("send_message", thread="plan", content=f"please do: {_task(request)}",
                         mentions=["coder"])  # fmt: skip
    if "done:" not in results[-1]:
        return tool_call("wait_for_mention", timeout=30)
    return tool_call("submit", summary=results[-1].split("The board now:")[-1].strip())


async def test_a_second_team_in_the_same_branch_starts_on_a_fresh_board() -> None:
    blocking = Team(
        [Agent("lead", tools=[*BOARD, "submit"], listen="blocking"), Agent("coder", tools=BOARD)],
        edges=CREW.edges,
    )

    @flow(team=blocking)
    async def one_after_the_other() -> list[TeamResult]:
        return [await team("alpha", lead="lead"), await team("beta", lead="lead")]

    def policy(request: ModelRequest) -> object:
        return _snapshot_lead(request) if request.agent == "lead" else _coder(request)

    with anyio.fail_after(GUARD):
        result = await run(one_after_the_other, model=FunctionModel(policy))
    first, second = result.output
    assert (first.reason, second.reason) == ("submitted", "submitted")
    # What the second lead's board shows: its own thread, with its own two messages only.
    assert "please do: beta" in second.answer and "done: beta" in second.answer
    assert "alpha" not in second.answer
    assert "beta" not in first.answer
    created = [(e.thread, e.board) for e in result.events if e.type == "thread_created"]
    assert created == [("plan", "team[0]"), ("plan", "team[1]")]


def _since_resumed(run_dir: Path) -> list[Any]:
    lines = (run_dir / EVENTS_FILE).read_bytes().splitlines()
    events = [parse_event(line) for line in lines]
    start = max(i for i, e in enumerate(events) if e.type == "run_resumed")
    return events[start:]


async def test_a_resumed_run_gives_each_team_its_own_board_back(tmp_path: Path) -> None:
    broken[0] = True
    with anyio.fail_after(GUARD):
        first = await run(side_by_side, model=FunctionModel(_policy), runs_root=tmp_path,
                          raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    again = FunctionModel(_policy)
    with anyio.fail_after(GUARD):
        resumed = await run(side_by_side, model=again, resume=first.run_dir,
                            raise_on_failure=False)  # fmt: skip
    # Each team came back turn for turn from the journal, its coder woken again by the
    # mention that woke it the first time, on its own board: no model call, nothing posted
    # or delivered twice, the same answers.
    assert resumed.status == "ok", resumed.error
    assert resumed.output == ["done: alpha", "done: beta"]
    assert again.requests == []
    since = _since_resumed(first.run_dir)
    assert _board_events(since) == []
    assert [e.reason for e in since if e.type == "team_ended"] == ["submitted", "submitted"]
    assert sum(e.type == "call_replayed" for e in since) >= 4  # each lead's two turns


def _serve(run_dir: Path, flow_ref: str) -> subprocess.Popen[str]:
    (run_dir / "run.json").write_text(json.dumps({"flow": flow_ref}))
    argv = [sys.executable, "-m", "swarmflow.cli", "board", "serve", str(run_dir)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=cli_env())


async def test_board_serve_serves_every_team_board_of_a_stopped_run(tmp_path: Path) -> None:
    broken[0] = False
    with anyio.fail_after(GUARD):
        done = await run(side_by_side, model=FunctionModel(_policy), runs_root=tmp_path)
    assert done.run_dir is not None
    server = _serve(done.run_dir, f"{__file__}:side_by_side")
    assert server.stdout is not None
    try:
        server.stdout.readline()  # the URL, announced once it serves: board.json is there
        as_coder = ("--run-dir", done.run_dir, "--as", "coder", "--json")
        alpha = await cli("show", *as_coder, "--board", "parallel[0]/team[0]")
        latest = await cli("show", *as_coder)
        nowhere = await cli("show", *as_coder, "--board", "team[7]")
    finally:
        server.terminate()
        await anyio.to_thread.run_sync(server.wait, 30)
        server.stdout.close()

    def contents(shown: tuple[int, str, str]) -> list[str]:
        assert shown[0] == 0, shown
        (thread,) = json.loads(shown[1])["threads"]
        return [m["content"] for m in thread["messages"]]

    assert contents(alpha) == ["please do: alpha", "done: alpha"]
    assert contents(latest) == ["please do: beta", "done: beta"]  # the latest team's board
    assert nowhere[0] == 1 and "no board named 'team[7]'" in nowhere[2]
    assert "'parallel[0]/team[0]', 'parallel[1]/team[0]'" in nowhere[2]
