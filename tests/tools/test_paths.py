"""Path safety: nothing a tool touches may lie outside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.core.errors import WorkspaceEscape
from swarmflow.tools.paths import relative_name, resolve_inside


def test_relative_paths_resolve_inside(root: Path) -> None:
    assert resolve_inside(root, "a/b.txt") == root.resolve() / "a" / "b.txt"
    assert resolve_inside(root, "./a.txt") == root.resolve() / "a.txt"
    assert resolve_inside(root, "") == root.resolve()


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "a/..", "..\\x"])
def test_dotdot_is_refused_with_path_and_workspace(root: Path, bad: str) -> None:
    with pytest.raises(WorkspaceEscape) as info:
        resolve_inside(root, bad)
    assert repr(bad) in info.value.message
    assert str(root) in info.value.message
    assert "'..'" in info.value.message


@pytest.mark.parametrize("bad", ["/etc/passwd", "~/x", "C:\\x"])
def test_absolute_paths_are_refused(root: Path, bad: str) -> None:
    with pytest.raises(WorkspaceEscape, match="absolute path"):
        resolve_inside(root, bad)


def test_symlink_leading_outside_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (root / "link").symlink_to(outside)
    with pytest.raises(WorkspaceEscape) as info:
        resolve_inside(root, "link/secret.txt")
    assert "outside the workspace" in info.value.message
    assert "'link/secret.txt'" in info.value.message


def test_symlink_inside_is_allowed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real")
    assert resolve_inside(root, "alias/f.txt") == root.resolve() / "real" / "f.txt"


def test_relative_name_uses_slashes(root: Path) -> None:
    assert relative_name(root, root.resolve() / "a" / "b.py") == "a/b.py"
