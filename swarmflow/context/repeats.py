"""Repeated lines collapse into one with a count; long runs of dropped lines into one note."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def collapse_repeats(lines: Sequence[str], least: int = 3) -> list[str]:
    """Runs of `least` or more identical lines become the line and how many times it came."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j] == lines[i]:
            j += 1
        count = j - i
        if count >= least:
            out.append(f"{lines[i]}  [repeated {count} times]")
        else:
            out.extend(lines[i:j])
        i = j
    return out


def keep_marked(lines: Sequence[str], keep: Iterable[bool], note: str = "lines") -> list[str]:
    """The lines whose flag is true, each run of the others replaced by one counting note."""
    out: list[str] = []
    dropped = 0
    for line, kept in zip(lines, keep, strict=True):
        if kept:
            if dropped:
                out.append(f"[… {dropped} {note} …]")
                dropped = 0
            out.append(line)
        else:
            dropped += 1
    if dropped:
        out.append(f"[… {dropped} {note} …]")
    return out
