"""A small async git runner: `anyio.run_process`, git's stderr in every failure."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from swarmflow.core.errors import WorkspaceError

# Commits must work on a fresh machine with no git config, must not be blocked by a user's
# signing setup or hooks, and must not start `gc` while other worktrees commit concurrently.
COMMIT_CONFIG = (
    "-c",
    "user.name=swarmflow",
    "-c",
    "user.email=swarmflow@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "gc.auto=0",
)
# A workspace is written by a model. Whatever it wrote, swarmflow's own git must not run a
# command on the host because of it: no hooks, no fsmonitor, no pager, no external diff or
# text conversion. These override every config file. The worktree commands also name their git
# directory explicitly (`WorktreeWorkspace`), so a `.git` file the workspace rewrote to point at
# a fake git directory (with its own config) is never read.
HARDENED = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "diff.external=",
    "-c",
    "credential.helper=",
)
# Set by git hooks and the like; inherited, they would point our commands at another repository.
_REDIRECTING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
)


def git_env() -> dict[str, str]:
    """Our environment, minus variables that redirect git, plus no interactive prompts."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _REDIRECTING
        and not k.startswith("GIT_CONFIG_KEY_")
        and not k.startswith("GIT_CONFIG_VALUE_")
    }
    return env | {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


async def _run(cwd: Path, args: tuple[str, ...], data: bytes | None) -> tuple[int, str, str]:
    """Run git; return exit code, stdout and stderr."""
    try:
        done = await anyio.run_process(
            ["git", *HARDENED, *args], cwd=cwd, input=data, check=False, env=git_env()
        )
    except OSError as exc:
        raise WorkspaceError(f"cannot run git in {cwd}: {exc}") from None
    out = done.stdout.decode("utf-8", errors="replace")
    return done.returncode, out, done.stderr.decode("utf-8", errors="replace")


async def git(cwd: Path, *args: str, data: bytes | None = None) -> str:
    """Git's stdout; WorkspaceError with the command and git's stderr when it fails."""
    code, out, err = await _run(cwd, args, data)
    if code != 0:
        raise WorkspaceError(
            f"`git {' '.join(args)}` failed in {cwd} (exit {code}): {err.strip() or out.strip()}"
        )
    return out


async def git_result(cwd: Path, *args: str, data: bytes | None = None) -> tuple[int, str, str]:
    """Git's exit code, stdout and stderr, for commands whose exit code is an answer
    (`check-ignore` exits 1 when it finds nothing)."""
    return await _run(cwd, args, data)


async def git_succeeds(cwd: Path, *args: str) -> bool:
    """True when git exits 0 (for questions such as `diff --quiet` or `cat-file -e`)."""
    code, _, _ = await _run(cwd, args, None)
    return code == 0


async def rev_parse(cwd: Path, rev: str, *where: str) -> str:
    """The full sha of the commit `rev` names (`where`: explicit --git-dir/--work-tree)."""
    return (await git(cwd, *where, "rev-parse", "--verify", f"{rev}^{{commit}}")).strip()


async def changed_files(cwd: Path, old: str, new: str, *where: str) -> tuple[str, ...]:
    """Paths that differ between two commits."""
    out = await git(cwd, *where, "diff", "--name-only", "-z", "--no-renames", old, new)
    return tuple(name for name in out.split("\0") if name)


async def diff(cwd: Path, old: str, new: str, *where: str) -> str:
    """The unified diff between two commits, unaffected by the user's diff config; binary
    changes carried whole (`--binary`), so that `git apply` can apply them."""
    args = ("diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", old, new)
    return await git(cwd, *where, *args)
