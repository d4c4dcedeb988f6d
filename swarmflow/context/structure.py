"""Structure-aware reduction: what a piece of text is (a diff, a log, JSON, a table) decides
what of it stays. Deterministic, and tried before any model-written summary."""

from __future__ import annotations

import re

from swarmflow.context.diffs import is_diff, reduce_diff
from swarmflow.context.logs import is_log, keep_flags
from swarmflow.context.repeats import collapse_repeats, keep_marked
from swarmflow.context.tabular import parse_json, reduce_json, reduce_table, table_separator

REDUCED = "[reduced to fit the context window: {kind}, {before:,} -> {after:,} characters]\n"
"""The first line of a reduced text: a reduced text is never reduced again."""
MARK = "[reduced to fit the context window:"


def reduce_text(text: str) -> tuple[str, str]:
    """`text` reduced by its structure, and the kind found ("" and `text` when nothing
    would be gained)."""
    if text.startswith(MARK):
        return text, ""
    kind, body = _reduced(text)
    if not kind or len(body) >= len(text) * 0.9:
        return text, ""
    return REDUCED.format(kind=kind, before=len(text), after=len(body)) + body, kind


_NUMBERED = re.compile(r"^ *\d+\t")
"""A line as `read_file` shows it: its number, a tab, the line."""


def _unnumbered(text: str) -> tuple[list[str], list[str]]:
    """The lines, and the lines without `read_file`'s numbers when most of them carry one."""
    lines = text.splitlines()
    numbered = sum(1 for line in lines if _NUMBERED.match(line))
    if not lines or numbered < 0.8 * len(lines):
        return lines, lines
    return lines, [_NUMBERED.sub("", line, count=1) for line in lines]


def _reduced(text: str) -> tuple[str, str]:
    shown, lines = _unnumbered(text)
    if lines is not shown:
        text = "\n".join(lines)  # JSON, diffs and tables are read without the numbers
    value = parse_json(text)
    if value is not None:
        return "JSON with long arrays and strings elided", reduce_json(value)
    if is_diff(lines):
        return "unified diff with context lines elided", "\n".join(reduce_diff(lines))
    if is_log(lines):
        kept = keep_marked(shown, keep_flags(lines))  # a log keeps its line numbers
        return "log with passing and progress lines elided", "\n".join(collapse_repeats(kept))
    sep = table_separator(lines)
    if sep is not None:
        return "table with rows elided", "\n".join(reduce_table(lines, sep))
    collapsed = collapse_repeats(lines)
    if len(collapsed) < len(lines):
        return "repeated lines counted", "\n".join(collapsed)
    return "", text
