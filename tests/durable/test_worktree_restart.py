"""A call killed in flight restarts in its worktree from the commit it started at: a later call
in a worktree keeps the earlier call's commit, and sheds only its own half-made edits.

A real git repository, a real `SIGKILL` in the middle of the second call
(`worktree_kill_target.py`), then a resume in this process.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from swarmflow import run_sync
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.record.files import JOURNAL_FILE
from swarmflow.testing import FunctionModel
from swarmflow.workspaces.worktree import WorktreeWorkspace
from tests.durable import worktree_kill_target as target
from tests.support.git_repo import make_repo, run_git
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]


def kill_in_the_second_call(tmp_path: Path) -> tuple[Path, Path]:
    """The repository and the run directory a process killed in the second call left."""
    repo = make_repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, target.__file__, str(tmp_path / "runs"), str(repo)]
    kill_when_ready(argv, env)
    (run_dir,) = (tmp_path / "runs").iterdir()
    return repo, run_dir


def records(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    lines = (run_dir / JOURNAL_FILE).read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def test_a_restarted_call_starts_from_its_own_start_not_the_worktrees_base(
    tmp_path: Path,
) -> None:
    repo, run_dir = kill_in_the_second_call(tmp_path)
    (first,) = records(run_dir, "call_finished")
    committed = first["patch"]["commit"]
    started = {r["key"]["index"]: r for r in records(run_dir, "call_started")}
    assert started[1]["head"] == committed  # the second call started at the first's commit
    assert started[0]["head"] == started[0]["workspace"]["base"] != committed
    (worktree,) = (run_dir / "worktrees").iterdir()
    assert (worktree / "half.txt").exists()  # what the killed call had done when it died

    seen: list[tuple[set[str], str]] = []
    restarted: list[set[str]] = []

    def resumed_policy(request: ModelRequest) -> str | ToolCall:
        assert request.prompt == target.SECOND  # the first call is replayed, not asked again
        files = {p.name for p in worktree.iterdir()}
        seen.append((files, run_git(worktree, "rev-parse", "HEAD").strip()))
        return "wrote two.txt"

    async def restart_from(self: WorktreeWorkspace, commit: str) -> None:
        await real_restart(self, commit)
        restarted.append({p.name for p in worktree.iterdir()})

    real_restart = WorktreeWorkspace.restart_from
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WorktreeWorkspace, "restart_from", restart_from)
        result = run_sync(target.two_calls_one_worktree, model=FunctionModel(resumed_policy),
                          resume=run_dir, repo=repo)  # fmt: skip
    assert result.status == "ok" and result.output == "wrote two.txt"
    (files,) = restarted
    assert "one.txt" in files  # the earlier call's commit is still in the worktree
    assert "half.txt" not in files  # the restarted call does not see its own half-made edits
    # Its first model call had settled: replayed (its tool runs again and writes half.txt);
    # the one in flight when the process died is the only one asked, and paid again.
    ((files, head),) = seen
    assert "half.txt" in files and head == committed
    payments = [e.payment for e in result.events if e.type == "model_called"]  # type: ignore[attr-defined]
    assert payments == ["paid", "paid", "paid", "replayed", "repaid"]  # both processes' calls
    # What the killed call had made is kept, in the repository's stash.
    stashes = run_git(repo, "stash", "list")
    assert f"swarmflow: unfinished work of swarmflow/{run_dir.name}/" in stashes
    untracked = run_git(repo, "show", "--name-only", "--format=", "stash@{0}^3")
    assert untracked.split() == ["half.txt"]
