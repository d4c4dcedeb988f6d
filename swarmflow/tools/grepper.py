"""The child process behind `search`: grep a workspace tree with a Python regular expression.

A catastrophic pattern such as `(a+)+$` over a long line runs for hours inside `re`, and no
thread can be interrupted; a child process can be killed. The parent (`search.py`) sends one
JSON request on stdin and reads one `file:line: text` match per stdout line, so whatever was
found before a kill is kept. Standard library only: the child starts with `python -I -S`.

The child is given no path to open: it inherits a descriptor of the folder to search, which
the parent opened through the safe-path layer, and walks below it without following links
(`walk`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

if __package__:
    from swarmflow.tools.walk import Found, looks_binary, matches, read_found, walk_files
else:  # run as a script in the child: walk.py sits beside this file
    sys.path.insert(0, str(Path(__file__).parent))
    from walk import (  # type: ignore[import-not-found,no-redef]
        Found,
        looks_binary,
        matches,
        read_found,
        walk_files,
    )

MAX_FILE_BYTES = 2_000_000
MAX_MATCH_CHARS = 300


def grep(request: dict[str, object]) -> Iterator[str]:
    """`file:line: text` for each matching line, in path order."""
    folder = int(str(request["folder"]))
    flags = re.IGNORECASE if request.get("ignore_case") else 0
    regex = re.compile(str(request["pattern"]), flags)
    glob = request.get("glob")
    folders = request.get("skip") or []
    skip = {str(f) for f in folders} if isinstance(folders, list) else set()
    file = request.get("file")
    start, pattern = str(request["start"]), str(glob) if glob is not None else None
    for found in walk_files(folder, start, skip, None if file is None else str(file)):
        if matches(pattern, found):
            yield from _grep_file(found, regex)


def _grep_file(found: Found, regex: re.Pattern[str]) -> Iterator[str]:
    """Matching lines of one file; unreadable, huge and binary files are skipped."""
    data = read_found(found, MAX_FILE_BYTES)
    if data is None or len(data) > MAX_FILE_BYTES or looks_binary(data):
        return
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if regex.search(line):
            yield f"{found.path}:{number}: {line.strip()[:MAX_MATCH_CHARS]}"


def main() -> None:
    """Read the request, print matches until `limit` of them (one more shows truncation)."""
    request = json.loads(sys.stdin.read())
    limit = int(request["limit"])
    for count, hit in enumerate(grep(request), 1):
        sys.stdout.write(hit.replace("\n", " ") + "\n")
        sys.stdout.flush()
        if count > limit:
            break


if __name__ == "__main__":
    main()
