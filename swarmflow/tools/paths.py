"""Path safety: every file a tool touches must stay inside the agent's workspace, outside `.git`.

A workspace's `.git` (a directory, or the file a worktree uses to point at its git directory) is
refused to every file tool: writing there would let a model install hooks, an `fsmonitor`
command or a fake git directory that swarmflow's own git would then run.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from swarmflow.core.errors import ToolError, WorkspaceEscape

MAX_PATH_CHARS = 1024
"""Longer paths are refused before they reach the filesystem (Linux allows 4096 bytes)."""
MAX_NAME_BYTES = 255
"""The longest single path component Linux filesystems accept."""
GIT_NAME = ".git"


def resolve_inside(root: Path, user_path: str) -> Path:
    """Resolve `user_path` (relative to `root`) to a real path that lies inside `root`.

    Raises WorkspaceEscape for absolute paths, `..` components and symlinks leading outside;
    ToolError for paths that are too long or that touch a `.git` entry.
    """
    text = _checked_text(user_path)
    where = f"(workspace: {root})"
    if _is_absolute(text):
        raise WorkspaceEscape(
            f"absolute path {user_path!r} refused {where}; use a path relative to the workspace"
        )
    parts = PurePosixPath(text.replace("\\", "/")).parts
    if ".." in parts:
        raise WorkspaceEscape(
            f"path {user_path!r} refused {where}: '..' components are not allowed"
        )
    _refuse_git(user_path, parts)
    real_root = root.resolve()
    try:
        target = (real_root / text).resolve()
    except OSError as exc:
        raise ToolError(f"path {user_path!r} cannot be resolved: {exc.strerror}") from None
    if not target.is_relative_to(real_root):
        raise WorkspaceEscape(
            f"path {user_path!r} resolves to {str(target)!r}, outside the workspace {str(root)!r}"
            " (a symlink leads out)"
        )
    # A symlink inside the workspace may still lead into `.git`.
    _refuse_git(user_path, target.relative_to(real_root).parts)
    return target


def is_git_path(parts: tuple[str, ...] | list[str]) -> bool:
    """True when any component names a `.git` entry (case-insensitively, as git itself does)."""
    return any(part.lower().rstrip(". ") == GIT_NAME for part in parts)


def relative_name(root: Path, path: Path) -> str:
    """`path` as the model should see it: relative to the workspace root, with `/` separators."""
    real_root = root.resolve()
    try:
        return path.relative_to(real_root).as_posix()
    except ValueError:
        return path.as_posix()


def _checked_text(user_path: str) -> str:
    """The path text, refused when it holds NUL bytes or is too long for the filesystem."""
    if "\x00" in user_path:
        raise ToolError(f"path {user_path[:200]!r} contains a NUL byte")
    if len(user_path) > MAX_PATH_CHARS:
        raise ToolError(
            f"path refused: it is {len(user_path)} characters long, the limit is "
            f"{MAX_PATH_CHARS} (it starts {user_path[:80]!r})"
        )
    for part in user_path.replace("\\", "/").split("/"):
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise ToolError(
                f"path refused: the component {part[:60]!r}... is {len(os.fsencode(part))} bytes "
                f"long; file names are limited to {MAX_NAME_BYTES} bytes"
            )
    return user_path.strip() or "."


def _refuse_git(user_path: str, parts: tuple[str, ...]) -> None:
    """ToolError when the path touches `.git`, the repository's own machinery."""
    if is_git_path(parts):
        raise ToolError(
            f"path {user_path!r} refused: '.git' holds the repository's machinery (config, "
            "hooks) and is off limits to the file tools; swarmflow commits your changes itself"
        )


def _is_absolute(text: str) -> bool:
    """True for POSIX, Windows-drive and home-relative paths, which all name places outside."""
    return (
        text.startswith(("/", "\\", "~"))
        or PurePosixPath(text).is_absolute()
        or bool(PureWindowsPath(text).drive)
    )
