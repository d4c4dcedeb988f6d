"""Fixtures for the attack tests: a small git repository with one commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def run_git(cwd: Path, *args: str) -> str:
    """Git's stdout (fixtures and assertions run outside the event loop)."""
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on branch `main` holding `app.py`."""
    path = tmp_path / "repo"
    path.mkdir()
    run_git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("def answer():\n    return 41\n")
    run_git(path, "add", "-A")
    run_git(path, "commit", "-q", "-m", "initial")
    return path
