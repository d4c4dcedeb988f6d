"""Walking a workspace tree the way every tool must: inside it, outside `.git` and the folders
it is told to skip (the run's records), regular files only, no link followed.

The walk starts from a folder descriptor that the safe-path layer opened (`core.safe_paths`)
and holds every folder open below it (`os.fwalk`): each name is looked up inside the folder
it was listed in, a link (to a file or a folder, inside the workspace or not) is neither
listed nor walked into, and a folder swapped for a link while it is walked is skipped. A link
that stays inside the workspace names a file the walk reaches at its real path anyway.

Standard library only: `search` runs this module in a child process (see `grepper`), which
imports nothing of swarmflow, and hands it the start folder's descriptor.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterator
from fnmatch import fnmatchcase
from typing import NamedTuple

BINARY_PROBE = 8192
"""How many leading bytes are looked at to tell a binary file from text."""
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a file the walk found is opened: never through a link, never waiting on a FIFO."""


class Found(NamedTuple):
    """A regular file the walk found."""

    path: str
    """Its path below the workspace root, with `/` separators."""
    below: str
    """Its path below the folder the walk started at (its name when the walk started at it)."""
    folder: int
    """A descriptor of the folder that holds it, open while the walk stands there."""
    name: str


def looks_binary(data: bytes) -> bool:
    """True when the data's start holds a NUL byte, as git and grep decide it."""
    return b"\x00" in data[:BINARY_PROBE]


def _is_git(name: str) -> bool:
    """True for a `.git` entry (case-insensitively, as git itself treats it)."""
    return name.lower().rstrip(". ") == ".git"


def _join(*paths: str) -> str:
    """`paths` joined with `/`, without empty and `.` components."""
    return "/".join(p for path in paths for p in path.split("/") if p not in ("", "."))


def walk_files(
    folder: int, start: str, skip: Collection[str] = (), file: str | None = None
) -> Iterator[Found]:
    """Regular files under the folder `folder` (at `start` below the root), sorted per
    folder, skipping `.git`, the `skip` folders (paths below the root), links and special
    files. With `file`, only that file of the folder, when it is a regular one."""
    if file is not None:
        if not _is_git(file) and _is_regular(folder, file):
            yield Found(_join(start, file), file, folder, file)
        return
    for here, dirs, files, fd in os.fwalk(".", dir_fd=folder):
        below = _join(here)
        dirs[:] = sorted(d for d in dirs if not _is_git(d) and _join(start, below, d) not in skip)
        for name in sorted(files):
            if not _is_git(name) and _is_regular(fd, name):
                yield Found(_join(start, below, name), _join(below, name), fd, name)


def _is_regular(folder: int, name: str) -> bool:
    """True when `name` in `folder` is itself a regular file (a link is not)."""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_found(found: Found, cap: int) -> bytes | None:
    """At most `cap` + 1 bytes of a file the walk found; None when it is no longer a regular
    file (swapped for a link or a FIFO since it was listed) or cannot be read."""
    try:
        fd = os.open(found.name, READ_FLAGS, dir_fd=found.folder)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(cap + 1)


def matches(pattern: str | None, found: Found) -> bool:
    """True when no pattern is given or it matches the name or the path below the start."""
    if pattern is None:
        return True
    return fnmatchcase(found.name, pattern) or fnmatchcase(found.below, pattern)
