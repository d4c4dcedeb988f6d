"""Fixtures for the tool tests: a workspace directory and a tool context around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarmflow.core.ports import ToolContext, Workspace
from swarmflow.core.team import Agent
from swarmflow.tools import ToolRegistry, default_registry
from swarmflow.workspaces import LocalWorkspace


def _ignore(*args: Any, **fields: Any) -> None:
    """An `emit` that drops events."""


def make_ctx(
    workspace: Workspace | None,
    session: str = "s1",
    declaration: Agent | None = None,
    emit: Any = _ignore,
) -> ToolContext:
    """A context for one session in `workspace`, as the declared agent (default: `coder`)."""
    name = declaration.name if declaration is not None else "coder"
    return ToolContext(
        agent=name, session=session, workspace=workspace, emit=emit, declaration=declaration
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace directory."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    """A context whose workspace is a local directory."""
    return make_ctx(LocalWorkspace(root))


@pytest.fixture
def host_ctx(root: Path) -> ToolContext:
    """A context whose agent runs its shell on the host (`sandbox="none"`)."""
    return make_ctx(LocalWorkspace(root), declaration=Agent("coder", sandbox="none"))


@pytest.fixture
def registry() -> ToolRegistry:
    """A registry with every built-in tool."""
    return default_registry()
