"""A small git repository with one commit, for the tests that need worktrees."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_git(cwd: Path, *args: str) -> str:
    """Git's stdout (tests only: fixtures and assertions run outside the event loop)."""
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(tmp_path: Path) -> Path:
    """A repository on branch `main` holding `app.py` and `README.md`."""
    path = tmp_path / "repo"
    path.mkdir()
    run_git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("def answer():\n    return 41\n")
    (path / "README.md").write_text("demo\n")
    run_git(path, "add", "-A")
    run_git(path, "commit", "-q", "-m", "initial")
    return path
