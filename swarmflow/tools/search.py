"""The read-only tree tools: `list_files` and `search`.

`search` greps in a child process (`grepper`) that is killed at its time limit, at the run's
deadline or on cancellation: a catastrophic regular expression cannot outlive the call, and the
matches found before the kill are still reported.

Both walk from a folder descriptor the safe-path layer opened (`core.safe_paths`), never
following a link (`walk`): the start path's links that stay inside the workspace are replaced
by what they name first (`locate`); below the start only real files are listed and searched.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from subprocess import DEVNULL, PIPE

import anyio
import anyio.to_thread
from pydantic import Field

from swarmflow.core import safe_paths
from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.tools.access import kind_of
from swarmflow.tools.base import ArgsModel, BuiltinTool, locate, private_of
from swarmflow.tools.grepper import MAX_MATCH_CHARS
from swarmflow.tools.limits import TimeLimit, time_limit
from swarmflow.tools.supervisor import ended as end_supervised
from swarmflow.tools.supervisor import start as start_supervised
from swarmflow.tools.walk import matches, walk_files

MAX_ENTRIES = 500
MAX_MATCHES = 200
SEARCH_SECONDS = 10.0
MAX_SEARCH_SECONDS = 60.0
GREPPER = Path(__file__).with_name("grepper.py")
"""The script the search child runs (standard library only)."""
_OUTPUT_CAP = (MAX_MATCHES + 1) * (MAX_MATCH_CHARS + 300)


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
    timeout: float = Field(
        SEARCH_SECONDS,
        gt=0,
        description=f"Seconds before the search stops (at most {MAX_SEARCH_SECONDS:g}).",
    )


class ListFiles(BuiltinTool[ListFilesArgs], name="list_files", workspace=True):
    """List files below a directory recursively (skips .git), one path per line, relative to the
    workspace root. Optionally filter with a glob pattern."""

    async def call(self, args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
        """Walk the tree in a worker thread (at most MAX_ENTRIES + 1 files) and list them."""
        root, start = locate(ctx, self.name, args.path)
        skip = _below(root, private_of(ctx, root))
        names = await anyio.to_thread.run_sync(_list, root, start, args.pattern, args.path, skip)
        if not names:
            matching = f" match {args.pattern!r}" if args.pattern else ""
            return ToolResult(f"no files under {args.path!r}{matching}")
        text = "\n".join(names[:MAX_ENTRIES])
        if len(names) > MAX_ENTRIES:
            text += f"\n... (listing stopped at {MAX_ENTRIES} entries; narrow the path or pattern)"
        return ToolResult(text)


SEARCH_DESCRIPTION = (
    "Search files for a Python regular expression. Prints `file:line: text` for each "
    f"matching line (at most {MAX_MATCHES}); skips .git, binary and special files. Stops "
    f"after `timeout` seconds (default {SEARCH_SECONDS:g})."
)


class Search(
    BuiltinTool[SearchArgs], name="search", workspace=True, description=SEARCH_DESCRIPTION
):
    """Finds lines matching a regular expression, as `file:line: text`."""

    async def call(self, args: SearchArgs, ctx: ToolContext) -> ToolResult:
        """Check the pattern and the path, then grep in a child process."""
        _compile(args.pattern, args.ignore_case)
        root, start = locate(ctx, self.name, args.path)
        file = _start_file(root, start, args.path)
        where = start.parent if file is not None else start
        limit = time_limit(min(args.timeout, MAX_SEARCH_SECONDS))
        try:
            with safe_paths.folder(root, where) as folder:
                request = {
                    "folder": folder,
                    "start": str(where),
                    "file": file,
                    "pattern": args.pattern,
                    "ignore_case": args.ignore_case,
                    "glob": args.glob,
                    "limit": MAX_MATCHES,
                    "skip": sorted(_below(root, private_of(ctx, root))),
                }
                hits, finished = await run_grep(request, limit.seconds, folder)
        except OSError as exc:  # swapped for a link or removed since `locate`
            raise ToolError(f"cannot search {args.path!r}: {exc.strerror}") from None
        return ToolResult(_report(args.pattern, hits, None if finished else limit))


def _report(pattern: str, hits: list[str], stopped: TimeLimit | None) -> str:
    """The observation: matches, a note when capped, and why a stopped search stopped."""
    text = "\n".join(hits[:MAX_MATCHES]) if hits else f"no matches for {pattern!r}"
    if len(hits) > MAX_MATCHES:
        text += f"\n... (stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob)"
    if stopped is not None:
        found = "so far" if hits else "before it stopped"
        text = (
            f"search stopped: {stopped.reason()} ({stopped.seconds:.1f}s); the results above "
            f"are those found {found}. A pattern with nested repetition such as (a+)+ can "
            "backtrack for hours: simplify it, or narrow the path or glob.\n" + text
        )
    return text


async def run_grep(
    request: dict[str, object], seconds: float, folder: int
) -> tuple[list[str], bool]:
    """Matches printed by the grep child, and whether it finished before `seconds` ran out;
    the child inherits the descriptor `folder` (the request's) and walks below it."""
    command = [sys.executable, "-I", "-S", str(GREPPER)]
    try:
        # Shielded: a cancel while the child is being started would leave it running with
        # nobody to end it; the `finally` below ends it however the search ends.
        with anyio.CancelScope(shield=True):
            process = await start_supervised(
                command,
                cwd=Path.cwd(),
                env=os.environ,
                stdin=PIPE,
                stdout=PIPE,
                stderr=DEVNULL,
                pass_fds=(folder,),
            )
    except OSError as exc:
        raise ToolError(f"cannot start the search: {exc}") from None
    out = bytearray()
    finished = False
    try:
        with anyio.move_on_after(seconds):
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send(json.dumps(request).encode())
            await process.stdin.aclose()
            async for chunk in process.stdout:
                out += chunk[: max(0, _OUTPUT_CAP - len(out))]
            await process.wait()
            finished = True
    finally:
        await end_supervised(process)
    if finished and process.returncode != 0:
        raise ToolError(f"search failed (exit {process.returncode})")
    lines = out.decode("utf-8", errors="replace").split("\n")
    # A line cut by the kill is dropped: only whole matches are reported.
    return [line for line in lines[:-1] if line], finished


def _start_file(root: Path, start: PurePosixPath, shown: str) -> str | None:
    """The name of the file `start` is, None when it is a folder; ToolError for anything
    else (nothing there, a FIFO, a device)."""
    try:
        mode = safe_paths.lstat(root, start).st_mode
    except FileNotFoundError:
        raise ToolError(f"no such file or directory: {shown!r}") from None
    except OSError as exc:
        raise ToolError(f"cannot search {shown!r}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        return None
    kind = kind_of(mode)
    if kind is not None:
        raise ToolError(f"{shown!r} is {kind}; search only reads regular files")
    return start.name


def _below(root: Path, folders: Iterable[Path]) -> frozenset[str]:
    """The run's folders (`private_of`) as paths below the workspace root."""
    return frozenset(folder.relative_to(root).as_posix() for folder in folders)


def _list(
    root: Path, start: PurePosixPath, pattern: str | None, shown: str, skip: frozenset[str]
) -> list[str]:
    """Relative names of matching files, one past the cap at most (so truncation shows);
    nothing of the `skip` folders."""
    names: list[str] = []
    try:
        with safe_paths.folder(root, start) as folder:
            for found in walk_files(folder, str(start), skip):
                if matches(pattern, found):
                    names.append(found.path)
                    if len(names) > MAX_ENTRIES:
                        break
    except OSError:
        raise ToolError(f"{shown!r} is not a directory in the workspace") from None
    return sorted(names)


def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """The compiled regex, or a ToolError saying what is wrong with it."""
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
