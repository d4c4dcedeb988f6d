"""Walking a workspace tree the way every tool must: inside it, outside `.git` and the folders
it is told to skip (the run's records), regular files only.

Standard library only: `search` runs this module in a child process (see `grepper`), which
imports nothing of swarmflow.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path

BINARY_PROBE = 8192
"""How many leading bytes are looked at to tell a binary file from text."""


def looks_binary(data: bytes) -> bool:
    """True when the data's start holds a NUL byte, as git and grep decide it."""
    return b"\x00" in data[:BINARY_PROBE]


def _is_git(name: str) -> bool:
    """True for a `.git` entry (case-insensitively, as git itself treats it)."""
    return name.lower().rstrip(". ") == ".git"


def walk_files(root: Path, start: Path, skip: Sequence[Path] = ()) -> Iterator[Path]:
    """Regular files under `start`, sorted, skipping `.git`, the `skip` folders, special
    files and escaping links.

    `root`, `start` and `skip` must be resolved paths. A symlinked file is kept only when it
    leads to a regular file inside the workspace, outside `.git` and the `skip` folders.
    """
    if not start.is_dir():
        if _regular_inside(root, start, skip):
            yield start
        return
    # os.walk does not follow directory symlinks, so a link cannot lead the walk outside,
    # and `here` is a real path: comparing it with `skip` needs no resolving.
    for here, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if not _is_git(d) and Path(here, d) not in skip)
        for name in sorted(files):
            path = Path(here) / name
            if not _is_git(name) and _regular_inside(root, path, skip):
                yield path


def _regular_inside(root: Path, path: Path, skip: Sequence[Path]) -> bool:
    """True when `path` is (or links to) a regular file inside `root`, outside `.git` and
    the `skip` folders."""
    try:
        if path.is_symlink():
            path = path.resolve()
            if not path.is_relative_to(root) or any(
                _is_git(p) for p in path.relative_to(root).parts
            ):
                return False
        if any(path.is_relative_to(folder) for folder in skip):
            return False
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, RuntimeError):
        return False


def matches(pattern: str | None, start: Path, path: Path) -> bool:
    """True when no pattern is given or it matches the name or the path below `start`."""
    if pattern is None:
        return True
    below = path.relative_to(start).as_posix() if path != start else path.name
    return fnmatchcase(path.name, pattern) or fnmatchcase(below, pattern)
