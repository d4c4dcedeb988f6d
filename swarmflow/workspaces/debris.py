"""Build debris: files that running a program leaves behind and that no product carries.

A coder that runs the tests leaves `__pycache__/*.pyc`, `.pytest_cache/`, ...; committed
into its patch, they turn a text change into a binary one that the task's repository never
asked for. A file a product *adds* (one its base did not track) is debris when it matches
one of `DEBRIS`, or a pattern a caller adds. A file the base tracked is never debris: a
change to it is a change of the product.

Patterns are gitignore's, in the subset that build debris needs: `name/` matches a folder of
that name at any depth, `name` (or a glob such as `*.pyc`) a file or folder of that name at any
depth, and a pattern holding a `/` inside matches from the repository's root.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

DEBRIS: tuple[str, ...] = (
    "__pycache__/",
    "*.pyc",
    "*.pyo",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    ".coverage",
    ".coverage.*",
    "htmlcov/",
    "*.egg-info/",
    ".ipynb_checkpoints/",
    "node_modules/",
    ".DS_Store",
)
"""The default list: Python's byte code and tool caches, coverage data, Node's packages."""


def is_debris(path: str, patterns: Iterable[str] = DEBRIS) -> bool:
    """Whether `path` (relative, `/`-separated) matches one of `patterns`."""
    parts = [p for p in path.split("/") if p]
    return any(_matches(parts, pattern) for pattern in patterns if pattern.strip())


def _matches(parts: list[str], pattern: str) -> bool:
    folder_only = pattern.endswith("/")
    bare = pattern.strip().strip("/")
    # A folder pattern matches the folders holding the file, never the file's own name.
    names = parts[:-1] if folder_only else parts
    if "/" not in bare:
        return any(fnmatchcase(name, bare) for name in names)
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(names))]
    return any(fnmatchcase(prefix, bare) for prefix in prefixes)


def debris_among(added: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
    """The paths of `added` (files a product adds) that are debris by `DEBRIS` and `extra`."""
    patterns = (*DEBRIS, *extra)
    return [path for path in added if is_debris(path, patterns)]
