"""A run's worktrees: where they live, what their branches are called, and the check that a
worktree read back from disk is one of them.

A run directory can be written by more than swarmflow (an agent whose workspace holds the
runs folder, a person, another program): a worktree root taken from its journal, or from the
repository's own list of worktrees, is used only when it is a folder of the run's
`worktrees/` and no symbolic link, and a journaled branch only when it is the one made for
that folder, so that nothing a resume or `clean` removes or resets lies outside the run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from swarmflow.core.errors import ConfigError

WORKTREES_DIR = "worktrees"
"""The folder of a run directory that holds its git worktrees, one folder each."""

WORKTREE_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")
"""A worktree folder's name: the session's slug, numbered when two reduce to the same."""


def slug(text: str) -> str:
    """`text` reduced to characters safe in a directory and a git branch name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:80] or "x"


def branch_of(run_dir: Path, name: str) -> str:
    """The branch of the run's worktree folder `name`: `swarmflow/<run>/<name>`."""
    return f"swarmflow/{slug(run_dir.name)}/{name}"


def worktrees_folder(run_dir: Path) -> Path:
    """Where the run at `run_dir` makes its worktrees."""
    return run_dir / WORKTREES_DIR


def contained_worktree(run_dir: Path, root: str | Path) -> Path:
    """`root` as one of the run's worktrees: `<run_dir>/worktrees/<name>`, absolute, with no
    symbolic link on the way, whether it exists or not.

    Raises:
        ConfigError: `root` is anywhere else, or it or the worktrees folder is a symbolic
            link (what it points at is not the run's to remove).
    """
    folder = Path(os.path.realpath(worktrees_folder(run_dir)))
    if os.path.islink(worktrees_folder(run_dir)):
        raise ConfigError(f"the run's worktrees folder {worktrees_folder(run_dir)} is a symlink")
    text = str(root)
    path = Path(text)
    inside = (
        "\x00" not in text
        and path.is_absolute()
        and os.path.normpath(text) == text
        and WORKTREE_NAME.fullmatch(path.name) is not None
        and os.path.realpath(path.parent) == str(folder)
    )
    if not inside:
        raise ConfigError(f"worktree {text[:200]!r} is not a folder of this run's {folder}")
    found = folder / path.name
    if os.path.islink(found):
        raise ConfigError(f"worktree {found} is a symlink; it is not the run's to take over")
    if os.path.lexists(found) and not found.is_dir():
        raise ConfigError(f"worktree {found} is not a folder")
    return found


def recorded_worktree(run_dir: Path, root: str, branch: str) -> Path:
    """The worktree a journal records at `root` on `branch`, when it is one the run made: a
    folder of its `worktrees/` (`contained_worktree`) on the branch named after that folder.

    Raises:
        ConfigError: saying which of the two is wrong.
    """
    path = contained_worktree(run_dir, root)
    if branch != branch_of(run_dir, path.name):
        raise ConfigError(
            f"worktree {path} is recorded on branch {branch[:120]!r}, not on its own "
            f"{branch_of(run_dir, path.name)!r}"
        )
    return path


__all__ = [
    "WORKTREES_DIR",
    "WORKTREE_NAME",
    "branch_of",
    "contained_worktree",
    "recorded_worktree",
    "slug",
    "worktrees_folder",
]
