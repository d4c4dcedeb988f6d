"""The demo's target: a tiny Python package with a real bug and a real failing test.

It is written fresh and committed as a new git repository, so every run starts from the same
known-broken state and the coders' worktrees have a HEAD to branch from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio.to_thread

from swarmflow.core.errors import WorkspaceError
from swarmflow.workspaces.git import git

DEMO_TASK = (
    "The test suite of this repository fails. Find the bug in the `calc` package and fix it in "
    "the source (do not change the tests), so that the whole test suite passes."
)
"""The task the demo gives its coders."""

BUGGY_LINE = "    return ordered[mid]\n"
"""The line of `calc/stats.py` that is wrong for inputs of even length."""

IDENTITY = ("-c", "user.name=swarmflow demo", "-c", "user.email=demo@swarmflow.invalid")
# Without these a machine with no git config refuses to commit, and a user's signing setup or
# hooks must not get in the way of a throwaway repository.
NEUTRAL = ("-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null")

FILES: dict[str, str] = {
    "README.md": "# calc\n\nSmall statistics helpers. Run the tests with `python -m pytest -q`.\n",
    ".gitignore": "__pycache__/\n*.pyc\n.pytest_cache/\n",
    # Its own pytest configuration stops pytest from climbing into a parent project's settings.
    "pyproject.toml": (
        '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
    ),
    "calc/__init__.py": (
        '"""Small statistics helpers."""\n\nfrom calc.stats import mean, median\n\n'
        '__all__ = ["mean", "median"]\n'
    ),
    "calc/stats.py": (
        '"""Averages of a non-empty sequence of numbers."""\n\n\n'
        "def mean(values):\n"
        '    """The arithmetic mean."""\n'
        "    return sum(values) / len(values)\n\n\n"
        "def median(values):\n"
        '    """The middle value; for an even count, the mean of the two middle values."""\n'
        "    ordered = sorted(values)\n"
        "    mid = len(ordered) // 2\n" + BUGGY_LINE
    ),
    "tests/test_stats.py": (
        "from calc import mean, median\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3, 4]) == 2.5\n\n\n"
        "def test_median_odd():\n    assert median([3, 1, 2]) == 2\n\n\n"
        "def test_median_even():\n    assert median([4, 1, 3, 2]) == 2.5\n\n\n"
        "def test_median_single():\n    assert median([7]) == 7\n"
    ),
}


def default_test_command() -> str:
    """The command that runs the target's tests with this interpreter (which has pytest)."""
    return f"{sys.executable} -m pytest -q -p no:cacheprovider"


async def create_target(path: Path) -> Path:
    """Write the package at `path` (which must not exist) and commit it; returns the path."""
    await anyio.to_thread.run_sync(_write_files, path)
    await git(path, "-c", "init.defaultBranch=main", "init", "--quiet")
    await git(path, "add", "-A")
    await git(path, *IDENTITY, *NEUTRAL, "commit", "--quiet", "-m", "calc: mean and median")
    return path


def _write_files(root: Path) -> None:
    """Write every file of the package below `root`, which must not exist yet."""
    if root.exists():
        raise WorkspaceError(f"target repository {root} already exists; pick a fresh path")
    for name, text in FILES.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
