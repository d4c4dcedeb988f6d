"""Test and build logs: failures, errors, tracebacks and the summary stay; the rest (passing
tests, progress, compiler chatter) collapses into counted notes."""

from __future__ import annotations

import re

_SIGNAL = re.compile(
    r"FAIL|ERROR|Error|error[:\[]|Exception|Traceback|AssertionError|assert |warning:|"
    r"^E\s|^>\s|^\S+:\d+:|exit (?:code|status)|Killed|Segmentation fault|panicked",
)
_SECTION = re.compile(r"^(?:={3,}|_{3,}|-{3,}) .* (?:={3,}|_{3,}|-{3,})$")
"""A pytest section header: `=== FAILURES ===`, `___ test_name ___`, `--- Captured ---`."""
_SUMMARY = re.compile(r"\b(?:passed|failed|errors?|skipped|xfailed|warnings?)\b.*\bin [\d.]+s\b")
_LOG_WORDS = re.compile(
    r"PASSED|FAILED|collected \d+ items|^test session starts|Traceback|"
    r"\d+ (?:passed|failed)|^(?:make|cargo|npm|gcc|cc|ld)\b|error:"
)
TAIL = 3
"""The last lines of a log always stay: a build's result is said at its end."""


def is_log(lines: list[str]) -> bool:
    hits = sum(1 for line in lines[:400] if _LOG_WORDS.search(line))
    return hits >= 2 or any(_SUMMARY.search(line) for line in lines[-20:])


def keep_flags(lines: list[str]) -> list[bool]:
    """Which lines of the log stay."""
    keep = [
        bool(_SIGNAL.search(line) or _SECTION.match(line) or _SUMMARY.search(line))
        for line in lines
    ]
    in_traceback = in_summary = False
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif in_traceback:
            keep[i] = True
            in_traceback = line.startswith((" ", "\t"))  # the exception line ends it
        if "short test summary info" in line:
            in_summary = True
        elif in_summary:
            keep[i] = True
            in_summary = not line.startswith("=")
    for i in range(max(len(lines) - TAIL, 0), len(lines)):
        keep[i] = True
    return keep
