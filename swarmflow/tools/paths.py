"""Path safety: every file a tool touches must stay inside the agent's workspace, outside `.git`
and outside the run's own records.

A workspace's `.git` (a directory, or the file a worktree uses to point at its git directory) is
refused to every file tool: writing there would let a model install hooks, an `fsmonitor`
command or a fake git directory that swarmflow's own git would then run.

So is the runs root, when the workspace holds it (a `local` workspace on the repository that
swarmflow runs from keeps its runs in `./runs`), and the run's own directory: they hold every
run's journal, event log and board token (`board.json`), which an agent must neither read nor
rewrite (`private_dirs`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath

from swarmflow.core import safe_paths
from swarmflow.core.errors import ToolError, WorkspaceEscape

MAX_PATH_CHARS = 1024
"""Longer paths are refused before they reach the filesystem (Linux allows 4096 bytes)."""
MAX_NAME_BYTES = 255
"""The longest single path component Linux filesystems accept."""
GIT_NAME = ".git"


def resolve_inside(root: Path, user_path: str, private: Iterable[Path] = ()) -> Path:
    """Resolve `user_path` (relative to `root`) to a real path that lies inside `root`: a
    link that stays inside is replaced by what it names (`safe_paths.resolve`, never followed
    by the kernel), so the real path holds no link and opening it with the safe-path layer
    is refused, never escapes, if a link was swapped in since.

    Raises WorkspaceEscape for absolute paths, `..` components and symlinks leading outside;
    ToolError for paths that are too long, that touch a `.git` entry or that lie in one of
    the `private` folders (resolved paths, as `private_dirs` gives them).
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
    target = real_root / _real_below(real_root, text, user_path)
    # A symlink inside the workspace may still lead into `.git`.
    _refuse_git(user_path, target.relative_to(real_root).parts)
    _refuse_private(user_path, target, real_root, private)
    return target


def _real_below(real_root: Path, text: str, user_path: str) -> PurePosixPath:
    """The real path of `text` below the workspace, its links replaced one by one without
    ever being followed (`safe_paths.resolve`); WorkspaceEscape when one leads out."""
    try:
        return safe_paths.resolve(real_root, text)
    except safe_paths.UnsafePath as exc:
        if exc.errno == errno.EXDEV:
            raise WorkspaceEscape(
                f"path {user_path!r} is refused: a symlink on it leads outside the workspace "
                f"{str(real_root)!r}"
            ) from None
        raise ToolError(f"path {user_path!r} cannot be resolved: {exc.strerror}") from None
    except OSError as exc:
        raise ToolError(f"path {user_path!r} cannot be resolved: {exc.strerror}") from None


def private_dirs(root: Path, run_dir: Path | None) -> tuple[Path, ...]:
    """The run's folders that lie inside the workspace `root`, resolved: the runs root that
    holds the run directory, else the run directory itself (none outside a run).

    Only folders strictly inside the workspace count: a workspace that lies in the run
    directory (a worktree, or the `local` workspace of a run without a repository) is shown,
    and what surrounds it is outside the workspace already.
    """
    if run_dir is None:
        return ()
    real_root = root.resolve()
    own = run_dir.resolve()
    for folder in (own.parent, own):
        if folder != real_root and folder.is_relative_to(real_root):
            return (folder,)
    return ()


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


def _refuse_private(user_path: str, target: Path, real_root: Path, private: Iterable[Path]) -> None:
    """ToolError when the path lies in the runs root or the run's directory."""
    for folder in private:
        if target.is_relative_to(folder):
            raise ToolError(
                f"path {user_path!r} refused: {relative_name(real_root, folder)!r} holds "
                "swarmflow's run records (journals, event logs, board tokens), which no tool "
                "shows to agents"
            )


def _is_absolute(text: str) -> bool:
    """True for POSIX, Windows-drive and home-relative paths, which all name places outside."""
    return (
        text.startswith(("/", "\\", "~"))
        or PurePosixPath(text).is_absolute()
        or bool(PureWindowsPath(text).drive)
    )
