"""What a sandboxed `run_shell` sees of a repository's git directory: what git reads to show
the repository, never a token in its config. Attacked through the real tool in real worktrees;
the tests skip with the reason when bubblewrap is missing or cannot create namespaces here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swarmflow.core.ports import Workspace
from swarmflow.core.team import Agent
from swarmflow.tools import ToolRegistry
from swarmflow.tools.sandbox import bwrap_problem
from swarmflow.workspaces import LocalWorkspace
from swarmflow.workspaces.worktree import WorktreeWorkspace

from .conftest import make_ctx

PROBLEM = bwrap_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")
TOKEN = "ghp_sandboxLeakCanary0123456789"
SECRETS = (TOKEN, "Bearer-canary-header", "included-canary", "worktree-canary", "smtp-canary")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def secret_repo(path: Path, *object_format: str) -> Path:
    """A repository with one commit and credentials in every place a config can hold them."""
    path.mkdir()
    git(path, "init", "--quiet", *object_format)
    (path / "app.py").write_text("print('v1')\n")
    git(path, "add", "app.py")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "first")
    git(path, "remote", "add", "origin", f"https://bot:{TOKEN}@example.com/org/app.git")
    git(path, "config", "http.extraHeader", "Authorization: Bearer-canary-header")
    git(path, "config", "sendemail.smtpPass", "smtp-canary")
    (path.parent / "included.conf").write_text("[github]\n\ttoken = included-canary\n")
    git(path, "config", "include.path", str(path.parent / "included.conf"))
    return path


async def sh(registry: ToolRegistry, workspace: Workspace, command: str) -> str:
    ctx = make_ctx(workspace, declaration=Agent("coder"))
    result = await registry.execute("run_shell", {"command": command}, ctx)
    assert result.ok, result.text
    return result.text


def assert_no_secret(text: str) -> None:
    leaked = [secret for secret in SECRETS if secret in text]
    assert not leaked, f"leaked {leaked} in:\n{text}"


async def test_a_worktree_command_cannot_read_the_token_in_the_repository_config(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    repo = secret_repo(tmp_path / "repo")
    ws = await WorktreeWorkspace.create(repo, "agent/one", tmp_path / "wt")
    text = await sh(
        registry,
        ws,
        'common=$(git rev-parse --git-common-dir); cat "$common/config"; '
        'cat "$common"/../included.conf; git config --list --show-origin; git remote -v; '
        "grep -r . \"$common\" 2>/dev/null | grep -v '^Binary'; echo END",
    )
    assert_no_secret(text)
    assert "repositoryformatversion = 0" in text and text.endswith("END\n")


async def test_status_diff_and_log_work_in_a_sandboxed_worktree(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    repo = secret_repo(tmp_path / "repo")
    ws = await WorktreeWorkspace.create(repo, "agent/one", tmp_path / "wt")
    (ws.root / "app.py").write_text("print('v2')\n")
    (ws.root / "new.py").write_text("x = 1\n")
    text = await sh(
        registry, ws, "git status --short; git diff; git log --format=%s; git show --stat HEAD"
    )
    assert " M app.py\n?? new.py\n" in text
    assert "-print('v1')\n+print('v2')" in text
    assert "\nfirst\n" in text and "app.py | 1 +" in text
    # The git directory is read-only: a commit is refused and the branch stays where it was.
    before = git(repo, "rev-parse", "agent/one")
    refused = await sh(registry, ws, "git add -A && git -c user.name=a -c user.email=a commit -m x")
    assert "Read-only file system" in refused
    assert git(repo, "rev-parse", "agent/one") == before


async def test_hooks_and_other_worktrees_are_not_shown(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    repo = secret_repo(tmp_path / "repo")
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\necho hook-canary\n")
    ws = await WorktreeWorkspace.create(repo, "agent/one", tmp_path / "wt")
    await WorktreeWorkspace.create(repo, "agent/two", tmp_path / "other")
    text = await sh(
        registry,
        ws,
        'common=$(git rev-parse --git-common-dir); ls -A "$common/worktrees"; ls -A "$common"; '
        'cat "$common/hooks/pre-commit"',
    )
    listing = text.split("\n")
    assert "wt" in listing and "other" not in listing
    assert "hooks" not in listing and "hook-canary" not in text


async def test_a_worktree_config_is_sanitised_and_the_object_format_kept(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    repo = secret_repo(tmp_path / "repo", "--object-format=sha256")
    git(repo, "config", "extensions.worktreeConfig", "true")
    ws = await WorktreeWorkspace.create(repo, "agent/one", tmp_path / "wt")
    git(ws.root, "config", "--worktree", "http.extraHeader", "Authorization: worktree-canary")
    text = await sh(
        registry, ws, 'cat "$(git rev-parse --git-dir)/config.worktree"; git log --format=%s'
    )
    assert_no_secret(text)
    assert text.endswith("first\n")  # a sha256 repository still reads: its extension is kept


async def test_a_repository_workspace_shows_no_token_either(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    repo = secret_repo(tmp_path / "repo")
    text = await sh(registry, LocalWorkspace(repo), "cat .git/config; git log --format=%s")
    assert_no_secret(text)
    assert text.endswith("first\n")
