"""A run that fails keeps what its agents did: worktrees, branches, commits, the log."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swarmflow import Agent, FlowFailed, Team, agent, flow, run
from swarmflow.testing import ScriptedModel, tool_call


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def test_a_failed_run_keeps_its_worktrees_and_commits(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "start")

    team = Team([Agent("coder", tools=["write_file", "submit"], workspace="worktree")])

    @flow(team=team)
    async def breaks() -> None:
        await agent("coder", "change a.txt")
        raise RuntimeError("the flow broke after the coder committed")

    model = ScriptedModel(
        [tool_call("write_file", path="a.txt", content="two\n"), tool_call("submit", summary="ok")]
    )
    with pytest.raises(FlowFailed) as failed:
        await run(breaks, model=model, repo=repo, runs_root=tmp_path / "runs")
    result = failed.value.result
    assert result.status == "failed" and "the flow broke" in str(result.error)
    change = next(e for e in result.events if e.type == "workspace_changed")
    assert git(repo, "cat-file", "-t", change.commit).strip() == "commit"
    assert change.git_branch in git(repo, "branch", "--list")
    worktrees = git(repo, "worktree", "list")
    assert str(result.run_dir) in worktrees
    assert result.events[-1].type == "run_finished" and result.events[-1].status == "failed"
