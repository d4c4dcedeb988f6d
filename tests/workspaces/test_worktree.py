"""Worktree workspaces: isolated branches, typed patches, commit callbacks, cleanup."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.core.errors import WorkspaceError
from swarmflow.core.patch import Patch
from swarmflow.core.ports import Workspace
from swarmflow.workspaces import WorktreeWorkspace, apply_patch

from .conftest import run_git

Commit = tuple[str, str, tuple[str, ...]]


async def _pair(repo: Path, tmp_path: Path, commits: list[Commit]) -> list[WorktreeWorkspace]:
    """Two worktrees of `repo`, recording commits into `commits`."""

    def record(sha: str, branch: str, files: tuple[str, ...]) -> None:
        commits.append((sha, branch, files))

    return [
        await WorktreeWorkspace.create(
            repo, f"cand/{i}", tmp_path / "wt" / str(i), on_commit=record
        )
        for i in range(2)
    ]


async def test_finalize_returns_the_patch_and_reports_the_commit(
    repo: Path, tmp_path: Path
) -> None:
    commits: list[Commit] = []
    edited, untouched = await _pair(repo, tmp_path, commits)
    assert isinstance(edited, Workspace)
    base = run_git(repo, "rev-parse", "HEAD").strip()
    (edited.root / "app.py").write_text("def answer():\n    return 42\n")
    (edited.root / "new.txt").write_text("hello\n")

    patch = await edited.finalize("fix the answer")
    assert patch.base == base
    assert patch.branch == "cand/0"
    assert patch.files == ("app.py", "new.txt")
    assert "-    return 41\n+    return 42" in patch.diff
    assert commits == [(patch.commit, "cand/0", ("app.py", "new.txt"))]
    assert run_git(repo, "log", "-1", "--format=%s %an", "cand/0").strip() == (
        "fix the answer swarmflow"
    )

    empty = await untouched.finalize("nothing")
    assert isinstance(empty, Patch)
    assert empty.empty and not empty
    assert empty.commit == base
    assert len(commits) == 1
    assert (repo / "app.py").read_text().endswith("41\n")


async def test_finalize_twice_keeps_the_cumulative_diff(repo: Path, tmp_path: Path) -> None:
    commits: list[Commit] = []
    ws, _ = await _pair(repo, tmp_path, commits)
    (ws.root / "a.txt").write_text("a\n")
    await ws.finalize("one")
    (ws.root / "b.txt").write_text("b\n")
    patch = await ws.finalize("two")
    assert patch.files == ("a.txt", "b.txt")
    assert [files for _, _, files in commits] == [("a.txt",), ("b.txt",)]


async def test_apply_patch_moves_an_output_branch(repo: Path, tmp_path: Path) -> None:
    ws, _ = await _pair(repo, tmp_path, [])
    (ws.root / "app.py").write_text("def answer():\n    return 42\n")
    patch = await ws.finalize("fix")
    sha = await apply_patch(repo, patch, "swarmflow/result")
    assert sha == patch.commit
    assert run_git(repo, "show", "swarmflow/result:app.py").endswith("return 42\n")


async def test_apply_patch_from_a_bare_diff(repo: Path, tmp_path: Path) -> None:
    ws, _ = await _pair(repo, tmp_path, [])
    (ws.root / "README.md").write_text("demo, patched\n")
    patch = await ws.finalize("readme")
    detached = Patch(diff=patch.diff, base=patch.base, files=patch.files)
    sha = await apply_patch(repo, detached, "out")
    assert sha != patch.commit
    assert run_git(repo, "show", "out:README.md") == "demo, patched\n"
    assert run_git(repo, "rev-parse", "out~1").strip() == patch.base
    assert "swarmflow-apply-" not in run_git(repo, "worktree", "list")


async def test_release_removes_worktrees_and_branches(repo: Path, tmp_path: Path) -> None:
    first, second = await _pair(repo, tmp_path, [])
    listed = run_git(repo, "worktree", "list")
    assert str(first.root) in listed and str(second.root) in listed

    await first.release()
    await second.release(keep=True)
    await first.release()  # a second release is harmless
    listed = run_git(repo, "worktree", "list")
    assert str(first.root) not in listed
    assert not first.root.exists()
    assert str(second.root) in listed
    branches = run_git(repo, "branch", "--format=%(refname:short)").split()
    assert "cand/0" not in branches and "cand/1" in branches


async def test_create_reports_git_errors(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="no-such-rev"):
        await WorktreeWorkspace.create(repo, "b", tmp_path / "x", base="no-such-rev")
    await WorktreeWorkspace.create(repo, "dup", tmp_path / "y")
    with pytest.raises(WorkspaceError, match="already exists"):
        await WorktreeWorkspace.create(repo, "dup", tmp_path / "z")
