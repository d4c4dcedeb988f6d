"""Fixtures for the attack tests: a small git repository with one commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.git_repo import make_repo, run_git

__all__ = ["run_git"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on branch `main` holding `app.py` and `README.md`."""
    return make_repo(tmp_path)
