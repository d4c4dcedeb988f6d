"""Unified diffs: every file header and hunk header stays, with the changed lines; context
lines go, and a hunk with very many changed lines keeps its first ones and a count."""

from __future__ import annotations

import re

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_FILE_LINES = (
    "diff ",
    "--- ",
    "+++ ",
    "index ",
    "new file",
    "deleted file",
    "rename ",
    "similarity ",
    "old mode",
    "new mode",
    "Binary files",
    "\\ No newline",
)
CHANGED_PER_HUNK = 12
"""Changed lines one hunk keeps; the rest are counted."""


def is_diff(lines: list[str]) -> bool:
    hunks = sum(1 for line in lines if HUNK.match(line))
    files = any(line.startswith(("--- ", "diff --git")) for line in lines)
    return hunks > 0 and files


def reduce_diff(lines: list[str]) -> list[str]:
    """The diff with its headers and changed lines (the first `CHANGED_PER_HUNK` a hunk)."""
    out: list[str] = []
    changed = context = 0

    def close_hunk() -> None:
        nonlocal changed, context
        extra = max(changed - CHANGED_PER_HUNK, 0)
        if extra or context:
            parts = [f"{extra} more changed lines"] if extra else []
            parts += [f"{context} context lines"] if context else []
            out.append(f"[… {', '.join(parts)} …]")
        changed = context = 0

    for line in lines:
        if HUNK.match(line) or line.startswith(_FILE_LINES[:2]):
            close_hunk()
            out.append(line)
        elif line.startswith(_FILE_LINES):
            out.append(line)
        elif line.startswith(("+", "-")):
            changed += 1
            if changed <= CHANGED_PER_HUNK:
                out.append(line)
        else:
            context += 1
    close_hunk()
    return out
