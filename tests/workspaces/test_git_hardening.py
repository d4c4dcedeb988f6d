"""swarmflow's own git runs nothing the workspace wrote: the fsmonitor trick, hooks, a fake
git directory behind the worktree's `.git` file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swarmflow.core.ports import ToolContext
from swarmflow.core.team import Agent
from swarmflow.tools import default_registry
from swarmflow.tools.sandbox import bwrap_problem
from swarmflow.workspaces import WorktreeWorkspace

from .conftest import run_git


def _ignore(*args: object, **fields: object) -> None:
    """Drop events."""


def _ctx(ws: WorktreeWorkspace, sandbox: str) -> ToolContext:
    agent = Agent("coder", sandbox=sandbox)  # type: ignore[arg-type]
    return ToolContext(agent="coder", session="s1", workspace=ws, emit=_ignore, declaration=agent)


def _fake_git_dir(marker: Path) -> dict[str, str]:
    """The files of a git directory whose config runs `touch marker` as fsmonitor and hooks."""
    hook = f"#!/bin/sh\ntouch {marker}\n"
    return {
        "fake/HEAD": "ref: refs/heads/main\n",
        "fake/config": (
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
            f"\tfsmonitor = touch {marker}; false\n\thooksPath = hooks\n"
        ),
        "fake/objects/info/keep": "",
        "fake/refs/heads/keep": "",
        "fake/hooks/pre-commit": hook,
        "fake/hooks/post-commit": hook,
    }


async def test_the_fsmonitor_trick_runs_nothing(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    ws = await WorktreeWorkspace.create(repo, "cand/evil", tmp_path / "wt")
    tools = default_registry()
    ctx = _ctx(ws, "none")
    for path, content in _fake_git_dir(marker).items():
        written = await tools.execute("write_file", {"path": path, "content": content}, ctx)
        assert written.ok, written.text
    # The file tools refuse to repoint .git ...
    refused = await tools.execute("write_file", {"path": ".git", "content": "gitdir: fake\n"}, ctx)
    assert not refused.ok
    # ... a host shell (sandbox="none") can, and does.
    shell = await tools.execute(
        "run_shell", {"command": "chmod +x fake/hooks/*; printf 'gitdir: fake\\n' > .git"}, ctx
    )
    assert shell.text.startswith("exit code: 0"), shell.text
    (ws.root / "app.py").write_text("def answer():\n    return 42\n")

    patch = await ws.finalize("the attack")

    assert not marker.exists()
    assert patch.files == (
        "app.py",
        "fake/HEAD",
        "fake/config",
        "fake/hooks/post-commit",
        "fake/hooks/pre-commit",
        "fake/objects/info/keep",
        "fake/refs/heads/keep",
    )
    assert run_git(repo, "log", "-1", "--format=%s", ws.branch).strip() == "the attack"
    # The control: plain git, following the rewritten .git file, does run the attacker's command.
    _plain_git_status(ws.root)
    assert marker.exists()


def _plain_git_status(root: Path) -> None:
    subprocess.run(["git", "status"], cwd=root, capture_output=True, check=False)


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox here: {bwrap_problem()}")
async def test_in_the_sandbox_the_worktree_git_file_cannot_be_rewritten(
    repo: Path, tmp_path: Path
) -> None:
    ws = await WorktreeWorkspace.create(repo, "cand/boxed", tmp_path / "wt")
    before = (ws.root / ".git").read_text()
    result = await default_registry().execute(
        "run_shell",
        {
            "command": "printf 'gitdir: fake\\n' > .git; rm -f .git; "
            f"echo '[core] fsmonitor = x' >> {ws.common_dir}/config; git log --oneline | wc -l"
        },
        _ctx(ws, "auto"),
    )
    assert "Read-only file system" in result.text or "busy" in result.text
    assert result.text.rstrip().endswith("1")  # git still reads history, read-only
    assert (ws.root / ".git").read_text() == before
    assert "fsmonitor" not in (ws.common_dir / "config").read_text()


async def test_repository_hooks_do_not_run_for_swarmflow_commits(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "hooked"
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "post-commit", "post-checkout", "commit-msg"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / name).chmod(0o755)
    ws = await WorktreeWorkspace.create(repo, "cand/hooks", tmp_path / "wt")
    (ws.root / "README.md").write_text("changed\n")
    await ws.finalize("edit")
    assert not marker.exists()
