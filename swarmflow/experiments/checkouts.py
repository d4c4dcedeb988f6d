"""Checkouts of a task's repository: one per run, and a fresh one for grading.

Every run works in its own clone of the task's repository, detached at the task's base commit
(`OUT/checkouts/<arm>/<task>/r<repeat>`), so runs never share files, whatever workspaces
their agents use. A clone is made under a temporary name and renamed into place, so a
killed experiment leaves either a whole checkout or none.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio.to_thread

from swarmflow.core.errors import ConfigError, WorkspaceError
from swarmflow.workspaces.git import git, rev_parse


async def base_commit(repo: Path, base: str) -> str:
    """The full sha of the task's base commit; a repository or commit that is not there is a
    `ConfigError` naming them."""
    if not (repo / ".git").exists():
        raise ConfigError(f"task repository {repo} is not a git repository")
    try:
        return await rev_parse(repo, base)
    except WorkspaceError:
        raise ConfigError(f"task repository {repo} has no commit {base!r}") from None


async def checkout(repo: Path, base: str, where: Path) -> Path:
    """`where`, a clone of `repo` detached at `base`; kept as it is when it exists already (a
    resumed run goes on in its own checkout)."""
    temporary = where.with_name(f".{where.name}.{os.getpid()}.tmp")
    if not await anyio.to_thread.run_sync(_make_room, where, temporary):
        return where
    await git(where.parent, "clone", "--quiet", "--no-hardlinks", str(repo), str(temporary))
    await git(temporary, "checkout", "--quiet", "--detach", base)
    temporary.rename(where)
    return where


def _make_room(where: Path, temporary: Path) -> bool:
    """False when `where` is there already; else its folder made and `temporary` cleared."""
    if where.exists():
        return False
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(temporary, ignore_errors=True)
    return True


async def final_diff(checkout_dir: Path, base: str) -> str:
    """Everything the run changed in its checkout since `base`, untracked files included (a
    binary-safe diff, as `git apply` takes it)."""
    await git(checkout_dir, "add", "-A")
    args = ("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv")
    return await git(checkout_dir, *args, base)
