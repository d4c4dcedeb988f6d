"""Shared helpers: a tiny git repository with a failing test, and patches against it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = "def double(x):\n    return x + 2\n"
FIXED = "def double(x):\n    return x * 2\n"
BREAKS = "def double(x):\n    return 4 if x == 2 else 0\n"
TESTS = (
    "from pkg.calc import double\n\n\ndef test_two():\n    assert double(2) == 4\n\n\n"
    "def test_three():\n    assert double(3) == 6\n"
)
FAST_PYTEST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c",
         "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


def make_repo(path: Path) -> Path:
    files = {
        ".gitignore": "__pycache__/\n",
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "pkg/__init__.py": "",
        "pkg/calc.py": "def double(x):\n    return x + x if x > 2 else x + 1\n",
        "tests/test_calc.py": TESTS,
    }
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path


def diff_for(repo: Path, source: str) -> str:
    """The patch that turns pkg/calc.py into `source` (the repository is left as it was)."""
    (repo / "pkg/calc.py").write_text(source)
    try:
        return git(repo, "diff")
    finally:
        git(repo, "checkout", "-q", "--", ".")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def write_tasks(path: Path, tasks: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path
