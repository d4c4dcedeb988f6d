"""`DefaultWorkspaces`: one provider per run, making every workspace kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.core.errors import ConfigError
from swarmflow.core.ports import Workspace, WorkspaceProvider
from swarmflow.workspaces import (
    DefaultWorkspaces,
    LocalWorkspace,
    SharedWorkspace,
    WorktreeWorkspace,
)

from .conftest import run_git


def _provider(tmp_path: Path, repo: Path | None = None) -> DefaultWorkspaces:
    return DefaultWorkspaces(tmp_path / "runs" / "run-1", repo=repo)


async def test_local_and_shared_without_a_repository(tmp_path: Path) -> None:
    provider: WorkspaceProvider = _provider(tmp_path)
    local = await provider.acquire("local", "coder", "s1")
    assert isinstance(local, LocalWorkspace)
    assert local.root == (tmp_path / "runs/run-1/workspace").resolve()
    versioned: Workspace = local
    assert await versioned.finalize("x") is None
    shared = await provider.acquire("shared", "a", "s1")
    assert isinstance(shared, SharedWorkspace)
    assert shared is await provider.acquire("shared", "b", "s2")
    assert shared.root == (tmp_path / "runs/run-1/shared").resolve()
    await provider.close()


async def test_bad_kinds_are_config_errors(tmp_path: Path) -> None:
    provider = _provider(tmp_path)
    with pytest.raises(ConfigError, match="pass repo="):
        await provider.acquire("worktree", "coder", "s1")
    with pytest.raises(ConfigError, match="did you mean 'shared'"):
        await provider.acquire("shard", "coder", "s1")
    with pytest.raises(ConfigError, match="'none' has no directory"):
        await provider.acquire("none", "coder", "s1")


async def test_worktrees_per_session_are_removed_on_close(repo: Path, tmp_path: Path) -> None:
    commits: list[str] = []
    provider = DefaultWorkspaces(
        tmp_path / "runs" / "run 1", repo=repo, on_commit=lambda sha, b, f: commits.append(b)
    )
    first = await provider.acquire("worktree", "coder", "coder/0")
    second = await provider.acquire("worktree", "coder", "coder:0")
    assert isinstance(first, WorktreeWorkspace) and isinstance(second, WorktreeWorkspace)
    assert first.branch == "swarmflow/run-1/coder-0"
    assert second.branch == "swarmflow/run-1/coder-0-2"
    assert first.root == (tmp_path / "runs/run 1/worktrees/coder-0").resolve()
    (first.root / "README.md").write_text("changed\n")
    await first.finalize("edit")
    assert commits == ["swarmflow/run-1/coder-0"]

    await provider.close()
    assert len(run_git(repo, "worktree", "list").splitlines()) == 1  # only the main one
    assert "swarmflow/" not in run_git(repo, "branch", "--list")


async def test_close_can_keep_worktrees(repo: Path, tmp_path: Path) -> None:
    provider = _provider(tmp_path, repo)
    ws = await provider.acquire("worktree", "coder", "s1")
    await provider.close(keep=True)
    assert ws.root.exists()
    assert "swarmflow/run-1/s1" in run_git(repo, "branch", "--list")
