"""The flagship flow, killed with SIGKILL mid-run, resumes in its worktrees and finishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio

from swarmflow import RunResult, run
from swarmflow.core.messages import ModelRequest
from swarmflow.flows import FixResult
from swarmflow.flows.demo import Reply, policy
from swarmflow.flows.parallel_coder_arbiter import make_flow
from swarmflow.record.files import JOURNAL_FILE
from swarmflow.testing import FunctionModel
from tests.flows.test_parallel_coder_arbiter import git, run_demo
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(__file__).with_name("flagship_kill_target.py")


def kill_mid_run(root: Path, agent: str) -> Path:
    """Kill the flagship inside an agent call of `agent` that has settled a model call."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill_when_ready([sys.executable, str(TARGET), str(root), agent], env, timeout=60)
    (run_dir,) = (root / "runs").iterdir()
    return run_dir


def journal(run_dir: Path, kind: str) -> list[dict[str, object]]:
    records = [json.loads(line) for line in (run_dir / JOURNAL_FILE).read_text().splitlines()]
    return [r for r in records if r["kind"] == kind]


def head_of(repo: Path, branch: str) -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", branch],
        check=False,
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None


def in_flight_heads(repo: Path, run_dir: Path) -> dict[str, tuple[str, str | None]]:
    """Each worktree whose own call started but never finished: its base and its head now.

    Which coders were between a commit and their record when the kill landed depends on the
    scheduling of the killed process, so the test reads it from what that process left. A
    call is known by its journal key (a session may make several calls); a call in flight in
    a worktree it borrowed (a reviewer in its coder's) restarts without resetting it.
    """
    finished = {json.dumps(r["key"], sort_keys=True) for r in journal(run_dir, "call_finished")}
    owner: dict[str, object] = {}
    heads: dict[str, tuple[str, str | None]] = {}
    for record in journal(run_dir, "call_started"):
        ws = record["workspace"]
        assert isinstance(ws, dict)
        own = owner.setdefault(ws["branch"], record["session"]) == record["session"]
        if own and json.dumps(record["key"], sort_keys=True) not in finished:
            base = git(repo, "rev-parse", ws["base"]).strip()
            heads[ws["branch"]] = (base, head_of(repo, ws["branch"]))
    return heads


def summary(out: FixResult) -> tuple[object, ...]:
    """What an interrupted and an uninterrupted run must agree on (commits carry timestamps)."""
    assert out.patch is not None
    tests = [(c.index, c.outcome, c.files, c.tests) for c in out.candidates]
    return out.chosen, out.verdict.choice, out.patch.diff, out.decided_by, tests


def test_a_killed_flagship_run_resumes_in_its_worktrees(tmp_path: Path) -> None:
    # The reviewers start once the coders have finished: the kill lands after finished agent
    # calls and inside one that has settled a model call, whatever the scheduling.
    run_dir = kill_mid_run(tmp_path, "reviewer")
    target = tmp_path / "target"
    finished = journal(run_dir, "call_finished")
    started = {r["workspace"]["branch"] for r in journal(run_dir, "call_started")}  # type: ignore[index]
    assert finished and started
    interrupted = in_flight_heads(target, run_dir)
    events = (run_dir / "events.jsonl").read_text().splitlines()
    settled = sum(json.loads(line)["type"] == "model_called" for line in events)

    asked: list[str] = []

    def counting(req: ModelRequest) -> Reply:
        asked.append(req.agent)
        return policy(req)

    async def resume() -> RunResult:
        return await run(make_flow(), model=FunctionModel(counting), human=[], resume=run_dir)

    resumed = anyio.run(resume)
    assert resumed.status == "ok", resumed.error
    reference = run_demo(tmp_path / "reference", human=[])
    assert summary(resumed.output) == summary(reference.output)
    # Every call that had finished was replayed; inside the calls in flight, a model call that
    # had settled is replayed when it sends what it sent then (a reviewer shown a commit made
    # again, with a new id, is asked again): only the rest went to the model.
    replayed = [e for e in resumed.events if e.type == "call_replayed"]
    assert len(replayed) == len(finished)
    paid = sum(int(r["spend"]["calls"]) for r in finished)  # type: ignore[index]
    assert settled > paid  # the calls in flight had settled some of their model calls
    reference_calls = sum(1 for e in reference.events if e.type == "model_called")
    again = [e for e in resumed.events if e.type == "model_called"][settled:]
    answered = [e for e in again if e.payment == "replayed"]  # type: ignore[attr-defined]
    assert answered and len(answered) + len(asked) == reference_calls - paid
    assert len(asked) >= reference_calls - settled
    # Every candidate was made in a worktree the killed process had started: none made anew.
    committed = {e.git_branch for e in resumed.events if e.type == "workspace_changed"}  # type: ignore[attr-defined]
    assert resumed.output.patch.branch in started
    assert committed <= started
    # The run ended ok, so its worktrees and coder branches are gone from the repository.
    assert len(git(target, "worktree", "list").splitlines()) == 1
    left = git(target, "branch", "--list", f"swarmflow/{resumed.run_id}/*").split()
    # A coder killed after its commit but before its record restarted from its base; its
    # commit stays on a `-interrupted` backup branch (nothing done is lost), and only then.
    backups = {b.removesuffix("-interrupted") for b in left if b.endswith("-interrupted")}
    assert sorted(set(left) - {f"{b}-interrupted" for b in backups}) == [
        f"swarmflow/{resumed.run_id}/result"
    ]
    committed_when_killed = {
        b for b, (base, head) in interrupted.items() if head not in (None, base)
    }
    assert committed_when_killed <= backups <= set(interrupted)
    for branch in backups:
        base, head = interrupted[branch]
        kept = git(target, "rev-parse", f"{branch}-interrupted").strip()
        assert kept != base
        git(target, "merge-base", "--is-ancestor", base, kept)
        if head is not None:  # a git child of the killed process may commit after the kill
            git(target, "merge-base", "--is-ancestor", head, kept)
