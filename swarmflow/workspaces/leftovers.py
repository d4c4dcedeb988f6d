"""What a run that is over leaves in a repository: its worktrees and `swarmflow/<run>/` branches."""

from __future__ import annotations

from pathlib import Path

from swarmflow.workspaces.git import git
from swarmflow.workspaces.provider import slug
from swarmflow.workspaces.worktree import remove_worktree, resolved


async def remove_leftovers(repo: Path, run_dir: Path) -> list[str]:
    """Remove the run's worktrees (under `run_dir/worktrees`) and branches; return what went."""
    repo, run_dir = await resolved(repo), await resolved(run_dir)
    removed: list[str] = []
    for path in await _worktrees(repo):
        if run_dir / "worktrees" in path.parents:
            await remove_worktree(repo, path)
            removed.append(f"worktree {path}")
    prefix = f"refs/heads/swarmflow/{slug(run_dir.name)}/"
    refs = await git(repo, "for-each-ref", "--format=%(refname)", prefix)
    for ref in refs.split():
        branch = ref.removeprefix("refs/heads/")
        await git(repo, "branch", "-D", "--quiet", branch)
        removed.append(f"branch {branch}")
    return removed


async def _worktrees(repo: Path) -> list[Path]:
    out = await git(repo, "worktree", "list", "--porcelain")
    lines = out.splitlines()
    return [Path(line.removeprefix("worktree ")) for line in lines if line.startswith("worktree ")]
