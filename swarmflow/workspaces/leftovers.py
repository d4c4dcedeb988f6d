"""What a run that is over leaves in a repository: its worktrees and `swarmflow/<run>/` branches."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread

from swarmflow.core.errors import ConfigError
from swarmflow.record.run_paths import contained_worktree, slug, worktrees_folder
from swarmflow.workspaces.git import git
from swarmflow.workspaces.worktree import remove_worktree, resolved


async def remove_leftovers(repo: Path, run_dir: Path) -> list[str]:
    """Remove the run's worktrees (under `run_dir/worktrees`) and branches; return what went.

    The repository's list of worktrees is read back from its files, which a workspace may
    have rewritten: only a folder of the run's own `worktrees/` that is no symbolic link is
    removed (`record.run_paths.contained_worktree`).
    """
    repo, run_dir = await resolved(repo), await resolved(run_dir)
    removed: list[str] = []
    listed = [_own_worktree(run_dir, path) for path in await _worktrees(repo)]
    # A folder the repository's list no longer names (its record rewritten, or half made)
    # is the run's all the same.
    unlisted = await anyio.to_thread.run_sync(_folders_in, run_dir)
    for own in dict.fromkeys([*(p for p in listed if p is not None), *unlisted]):
        await remove_worktree(repo, own)
        removed.append(f"worktree {own}")
    prefix = f"refs/heads/swarmflow/{slug(run_dir.name)}/"
    refs = await git(repo, "for-each-ref", "--format=%(refname)", prefix)
    for ref in refs.split():
        branch = ref.removeprefix("refs/heads/")
        await git(repo, "branch", "-D", "--quiet", branch)
        removed.append(f"branch {branch}")
    return removed


def _own_worktree(run_dir: Path, path: Path) -> Path | None:
    """`path` when it is one of the run's worktrees, else None (another run's, the
    repository's own, or a record pointing anywhere else)."""
    try:
        return contained_worktree(run_dir, path)
    except ConfigError:
        return None


def _folders_in(run_dir: Path) -> list[Path]:
    """The run's worktree folders on disk (symbolic links left alone)."""
    folder = worktrees_folder(run_dir)
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = (_own_worktree(run_dir, entry) for entry in sorted(folder.iterdir()))
    return [path for path in found if path is not None and path.is_dir()]


async def _worktrees(repo: Path) -> list[Path]:
    out = await git(repo, "worktree", "list", "--porcelain")
    lines = out.splitlines()
    return [Path(line.removeprefix("worktree ")) for line in lines if line.startswith("worktree ")]
