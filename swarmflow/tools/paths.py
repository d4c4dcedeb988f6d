"""Path safety: every file a tool touches must stay inside the agent's workspace."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from swarmflow.core.errors import ToolError, WorkspaceEscape


def resolve_inside(root: Path, user_path: str) -> Path:
    """Resolve `user_path` (relative to `root`) to a real path that lies inside `root`.

    Raises WorkspaceEscape for absolute paths, `..` components and symlinks leading outside.
    """
    if "\x00" in user_path:
        raise ToolError(f"path {user_path!r} contains a NUL byte")
    text = user_path.strip() or "."
    where = f"(workspace: {root})"
    if _is_absolute(text):
        raise WorkspaceEscape(
            f"absolute path {user_path!r} refused {where}; use a path relative to the workspace"
        )
    if ".." in PurePosixPath(text.replace("\\", "/")).parts:
        raise WorkspaceEscape(
            f"path {user_path!r} refused {where}: '..' components are not allowed"
        )
    real_root = root.resolve()
    target = (real_root / text).resolve()
    if not target.is_relative_to(real_root):
        raise WorkspaceEscape(
            f"path {user_path!r} resolves to {str(target)!r}, outside the workspace {str(root)!r}"
            " (a symlink leads out)"
        )
    return target


def relative_name(root: Path, path: Path) -> str:
    """`path` as the model should see it: relative to the workspace root, with `/` separators."""
    real_root = root.resolve()
    try:
        return path.relative_to(real_root).as_posix()
    except ValueError:
        return path.as_posix()


def _is_absolute(text: str) -> bool:
    """True for POSIX, Windows-drive and home-relative paths, which all name places outside."""
    return (
        text.startswith(("/", "\\", "~"))
        or PurePosixPath(text).is_absolute()
        or bool(PureWindowsPath(text).drive)
    )
