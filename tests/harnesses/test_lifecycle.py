"""A harness's processes end with its call: cancelled, at its timeout, or when the run's own
process is killed; a finished harness call is replayed on resume without its program."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow, run, run_sync
from swarmflow.core.errors import BudgetExhausted, FlowFailed
from swarmflow.core.messages import ModelRequest
from swarmflow.harnesses import Harness, running
from swarmflow.testing import FunctionModel
from tests.harnesses import kill_target as target
from tests.harnesses.programs import command
from tests.harnesses.support import events_in, of_type, processes_with
from tests.support.git_repo import make_repo
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]


def gone(marker: str, within: float = 10.0) -> bool:
    """Whether every process holding `marker` has ended (the kernel tears a sandbox down
    after its init dies, so a killed run's harness may take a moment to go)."""
    deadline = time.monotonic() + within
    while processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_cancelling_the_run_ends_every_process_of_the_harness(tmp_path: Path) -> None:
    marker = f"sleeper-{uuid.uuid4().hex}"
    sleeper = Agent("sleeper", workspace="local",
                    harness=Harness(command=command("sleeper", marker), task="stdin"))  # fmt: skip

    @flow(team=Team([sleeper]))
    async def sleep() -> str:
        return (await agent("sleeper", "sleep")).text

    async def main() -> list[int]:
        ready = anyio.Event()

        async def policy(request: ModelRequest) -> str:
            ready.set()  # the harness and its detached child are both running now
            return "ok"

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run(sleep, model=FunctionModel(policy), events="jsonl"))
            await ready.wait()
            running = processes_with(marker)
            tg.cancel_scope.cancel()
        return running

    assert len(anyio.run(main)) >= 2  # the program and the child it detached
    assert gone(marker, within=2.0)


@pytest.mark.parametrize("mode", ["in_harness", "in_harness_host"])
def test_a_run_killed_in_a_harness_call_leaves_no_harness_process(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"killed-{uuid.uuid4().hex}"
    repo = make_repo(tmp_path)
    # A temporary folder of this test's own (short: the harness's sockets live in it; left in
    # place, since what the process caches there outlives the test): another worker's harness
    # call sweeps the dead owners' folders of the shared one, which would take the killed
    # run's first.
    private = Path(tempfile.mkdtemp(prefix="sf-"))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(private)}
    argv = [
        sys.executable,
        target.__file__,
        mode,
        str(tmp_path / "runs"),
        str(repo),
        marker,
    ]
    kill_when_ready(argv, env)
    assert gone(marker)
    left = [f for f in private.glob("swarmflow-harness-*")
            if (f / "owner").is_file() and not _alive(int((f / "owner").read_text()))]  # fmt: skip
    assert left  # the killed run could not clean up; the next harness call sweeps it
    run_sync(target.code_and_review("after_harness", "-"), model=FunctionModel(target.coder_answer2),
             repo=repo)  # fmt: skip
    assert not [f for f in left if f.exists()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def test_resume_replays_a_finished_harness_call_without_its_program(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        target.__file__,
        "after_harness",
        str(tmp_path / "runs"),
        str(repo),
        "-",
    ]
    kill_when_ready(argv, env)
    (run_dir,) = (tmp_path / "runs").iterdir()
    (first,) = events_in(run_dir, "harness_ended")
    assert first.reason == "completed"  # type: ignore[attr-defined]

    def policy(request: ModelRequest) -> str:
        assert request.agent == "reviewer", "the finished harness call ran again"
        assert "+    return 42" in request.prompt  # the replayed patch, along its edge
        return "approve"

    result = run_sync(target.code_and_review("after_harness", "-"), model=FunctionModel(policy),
                      resume=run_dir, repo=repo)  # fmt: skip
    assert result.status == "ok" and result.output == "answer() returns 42 / approve"
    assert len(events_in(run_dir, "harness_started")) == 1  # only the first process's
    (replayed,) = [e for e in of_type(result, "call_replayed") if e.agent == "coder"]
    assert result.usage.get("coder") is None or result.usage["coder"].calls == 0


def test_resume_restarts_a_harness_call_in_flight_in_its_worktree_from_its_start(
    tmp_path: Path,
) -> None:
    """Killed while the harness was mid-work (a half-done file in its worktree, its second
    model call in flight): the resumed run starts the program again on the worktree as the
    call found it; the program's first model call, which had settled, is replayed (so it
    writes what it wrote before, once), and only the call in flight is asked again."""
    repo = make_repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, target.__file__, "mid_harness", str(tmp_path / "runs"), str(repo), "-"]
    kill_when_ready(argv, env)
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert len(events_in(run_dir, "harness_started")) == 1
    assert not events_in(run_dir, "harness_ended")  # killed in flight
    halves = [p for p in (run_dir / "worktrees").rglob("app.py") if "half done" in p.read_text()]
    assert halves  # the killed program had written its half-done file
    asked: list[str] = []

    def policy(request: ModelRequest) -> str:
        asked.append(f"{request.agent}: {request.prompt[:9]}")
        if request.agent == "reviewer":
            # drafts.txt is appended to: the half-done code once, as the restarted program
            # wrote it on the worktree the call started from (app.py's diff holds it once too).
            assert request.prompt.count("half done") == 2
            return "approve"
        return target.coder_answer(request)

    result = run_sync(target.code_and_review("mid_harness", "-"), model=FunctionModel(policy),
                      resume=run_dir, repo=repo)  # fmt: skip
    assert result.status == "ok" and result.output == "answer() returns 42 / approve"
    assert asked == ["coder: summarise", "reviewer: Patch(dif"]
    assert len(events_in(run_dir, "harness_started")) == 2  # the program ran again
    (ended,) = of_type(result, "harness_ended")
    assert ended.reason == "completed"
    assert (repo / "app.py").read_text() == "def answer():\n    return 41\n"  # in its worktree


def test_a_hostile_harness_is_bounded_and_the_run_goes_on(tmp_path: Path) -> None:
    marker = f"hostile-{uuid.uuid4().hex}"
    hostile = Agent("hostile", workspace="local",
                    harness=Harness(command=command("hostile", marker), task="stdin", timeout=4))  # fmt: skip

    @flow(team=Team([hostile, Agent("native")]))
    async def survive() -> str:
        try:
            await agent("hostile", "attack")
        except BudgetExhausted as exc:
            stopped = exc.reason
        return f"{stopped}; {(await agent('native', 'carry on')).text}"

    result = run_sync(survive, model=FunctionModel(lambda r: "done"))
    assert result.status == "ok" and result.output == "wall clock; done"
    (ended,) = of_type(result, "harness_ended")
    assert ended.exit_code is None and ended.reason == "wall clock"
    assert ended.refusals["body_too_large"] == 1
    assert ended.refusals["connections"] >= 400  # at most 32 at once; the rest turned away
    kinds = {e.kind: e.status for e in of_type(result, "harness_refused")}
    assert kinds["body_too_large"] == 413 and kinds["connections"] == 503
    assert [e for e in of_type(result, "model_called") if e.agent == "hostile"] == []
    assert gone(marker, within=2.0)


NO_BWRAP = "bubblewrap (bwrap) is not installed"


def test_a_harness_that_must_be_sandboxed_is_refused_without_bubblewrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(running, "bwrap_problem", lambda: NO_BWRAP)
    strict = Agent("strict", workspace="local", sandbox="bwrap",
                   harness=Harness(command=command("coder", "{task}")))  # fmt: skip

    @flow(team=Team([strict]))
    async def sandboxed() -> str:
        return (await agent("strict", "go")).text

    with pytest.raises(FlowFailed, match=r"runs only in the sandbox \(sandbox='bwrap'\), but bub"):
        run_sync(sandboxed, model=FunctionModel(lambda r: "x"))


def test_without_bubblewrap_a_harness_runs_on_the_host_and_the_run_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(running, "bwrap_problem", lambda: NO_BWRAP)
    coder = Agent(
        "coder", workspace="worktree", harness=Harness(command=command("coder", "{task}"))
    )

    @flow(team=Team([coder]))
    async def on_host() -> str:
        first = await agent("coder", "make answer() return 42")
        assert first.patch is not None and "+    return 42" in first.patch.diff
        return (await agent("coder", "again")).text

    result = run_sync(on_host, model=FunctionModel(target.coder_answer), repo=make_repo(tmp_path))
    assert result.output == "answer() returns 42"
    assert [e.sandboxed for e in of_type(result, "harness_started")] == [False, False]
    (said,) = of_type(result, "sandbox_unavailable")  # once per run
    assert "Harness programs run on the host" in said.reason


@pytest.mark.parametrize("ending", ["ok", "timeout", "allowance"])
def test_a_host_harness_leaves_no_detached_child_however_its_call_ends(ending: str) -> None:
    """On the host (no sandbox), a program's `setsid` grandchild is gone when the call ends:
    the program exited, was stopped at its timeout, or at the agent's allowance."""
    marker = f"detached-{ending}-{uuid.uuid4().hex}"
    mode = "sleeper" if ending == "timeout" else "detacher"
    harness = Harness(command=command(mode, marker), task="stdin",
                      timeout=2 if ending == "timeout" else 60)  # fmt: skip
    host = Agent("host", workspace="local", sandbox="none", harness=harness,
                 allowance=5 if ending == "allowance" else None)  # fmt: skip
    seen: list[int] = []

    @flow(team=Team([host]))
    async def detach() -> str:
        try:
            return (await agent("host", "go")).text
        except BudgetExhausted as exc:
            return exc.reason

    def policy(request: ModelRequest) -> str:
        seen.extend(processes_with(marker))  # the detached child is running now
        return "fine"

    result = run_sync(detach, model=FunctionModel(policy))
    assert result.status == "ok"
    expected = {"ok": "200: ", "timeout": "wall clock", "allowance": "budget exhausted"}
    assert expected[ending] in str(result.output)
    assert ending == "allowance" or seen  # the detached child was running meanwhile
    assert processes_with(marker) == []  # nothing of it outlived the call
