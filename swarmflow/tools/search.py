"""The read-only tree tools: `list_files` and `search` (a grep written in Python, no subprocess)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

import anyio.to_thread
from pydantic import BaseModel, Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.tools.base import ArgsModel, expect_args, root_of
from swarmflow.tools.paths import relative_name, resolve_inside

SKIP_DIRS = frozenset({".git"})
MAX_ENTRIES = 500
MAX_MATCHES = 200
MAX_MATCH_CHARS = 300
MAX_SEARCH_BYTES = 2_000_000


class ListFilesArgs(ArgsModel):
    """Arguments of `list_files`."""

    path: str = Field(".", description="Directory to list, relative to the workspace root.")
    pattern: str | None = Field(
        None,
        description="Optional glob such as '*.py' or 'src/*test*'; `*` also crosses directories. "
        "Matched against the file name and the path relative to `path`.",
    )


class SearchArgs(ArgsModel):
    """Arguments of `search`."""

    pattern: str = Field(description="Python regular expression to look for, line by line.")
    path: str = Field(".", description="File or directory to search, relative to the root.")
    glob: str | None = Field(None, description="Only search files matching this glob, e.g. '*.py'.")
    ignore_case: bool = Field(False, description="Match without regard to case.")


class ListFiles:
    """Lists files below a directory, recursively, skipping `.git`."""

    name = "list_files"
    description = (
        "List files below a directory recursively (skips .git), one path per line, relative to "
        "the workspace root. Optionally filter with a glob pattern."
    )
    args: type[BaseModel] = ListFilesArgs
    needs_workspace = True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Walk the tree in a worker thread and list what matches."""
        a = expect_args(args, ListFilesArgs)
        root = root_of(ctx, self.name)
        start = resolve_inside(root, a.path)
        names = await anyio.to_thread.run_sync(_list, root, start, a.pattern, a.path)
        if not names:
            matching = f" match {a.pattern!r}" if a.pattern else ""
            return ToolResult(f"no files under {a.path!r}{matching}")
        text = "\n".join(names[:MAX_ENTRIES])
        if len(names) > MAX_ENTRIES:
            text += f"\n... (listing stopped at {MAX_ENTRIES} entries; narrow the path or pattern)"
        return ToolResult(text)


class Search:
    """Finds lines matching a regular expression, as `file:line: text`."""

    name = "search"
    description = (
        "Search files for a Python regular expression. Prints `file:line: text` for each "
        f"matching line (at most {MAX_MATCHES}); skips .git and binary files."
    )
    args: type[BaseModel] = SearchArgs
    needs_workspace = True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Compile the pattern and grep the tree in a worker thread."""
        a = expect_args(args, SearchArgs)
        regex = _compile(a.pattern, a.ignore_case)
        root = root_of(ctx, self.name)
        start = resolve_inside(root, a.path)
        hits = await anyio.to_thread.run_sync(_grep, root, start, regex, a.glob, a.path)
        if not hits:
            return ToolResult(f"no matches for {a.pattern!r}")
        text = "\n".join(hits[:MAX_MATCHES])
        if len(hits) > MAX_MATCHES:
            text += f"\n... (stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob)"
        return ToolResult(text)


def walk_files(root: Path, start: Path) -> Iterator[Path]:
    """Files under `start` in sorted order, skipping `.git` and symlinks that lead outside."""
    real_root = root.resolve()
    if start.is_file():
        yield start
        return
    # os.walk does not follow directory symlinks, so a link cannot lead the walk outside.
    for here, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(here) / name
            if not path.is_symlink() or path.resolve().is_relative_to(real_root):
                yield path


def _matches(pattern: str | None, start: Path, path: Path) -> bool:
    """True when no pattern is given or it matches the name or the path below `start`."""
    if pattern is None:
        return True
    below = path.relative_to(start).as_posix() if path != start else path.name
    return fnmatchcase(path.name, pattern) or fnmatchcase(below, pattern)


def _list(root: Path, start: Path, pattern: str | None, shown: str) -> list[str]:
    """Relative names of matching files, one past the cap at most (so truncation shows)."""
    if not start.is_dir():
        raise ToolError(f"{shown!r} is not a directory in the workspace")
    names: list[str] = []
    for path in walk_files(root, start):
        if _matches(pattern, start, path):
            names.append(relative_name(root, path))
            if len(names) > MAX_ENTRIES:
                break
    return sorted(names)


def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """The compiled regex, or a ToolError saying what is wrong with it."""
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None


def _grep(
    root: Path, start: Path, regex: re.Pattern[str], glob: str | None, shown: str
) -> list[str]:
    """`file:line: text` for matching lines, one past the cap at most."""
    if not start.exists():
        raise ToolError(f"no such file or directory: {shown!r}")
    hits: list[str] = []
    for path in walk_files(root, start):
        if not _matches(glob, start, path):
            continue
        hits.extend(_grep_file(relative_name(root, path), path, regex))
        if len(hits) > MAX_MATCHES:
            break
    return hits


def _grep_file(name: str, path: Path, regex: re.Pattern[str]) -> Iterator[str]:
    """Matching lines of one file; unreadable, huge and binary files are skipped."""
    try:
        if path.stat().st_size > MAX_SEARCH_BYTES:
            return
        data = path.read_bytes()
    except OSError:
        return
    if b"\x00" in data[:8192]:
        return
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if regex.search(line):
            yield f"{name}:{number}: {line.strip()[:MAX_MATCH_CHARS]}"
