"""JSON and tables keep their shape with rows elided: JSON stays valid JSON (long arrays keep
their first and last items and a string counting the rest), a table keeps its header, its
first and last rows and a row counting the ones between."""

from __future__ import annotations

import json
from typing import Any

ITEMS_KEPT = (3, 1)
"""Items a long array keeps from its start and from its end."""
KEYS_KEPT = 20
STRING_CHARS = 300
ROWS_KEPT = (5, 2)
"""Rows a long table keeps after its header, and at its end."""


def parse_json(text: str) -> Any:
    """The JSON value `text` holds, or None when it holds none (or a bare scalar)."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def reduce_json(value: object) -> str:
    return json.dumps(_shrink(value), ensure_ascii=False, indent=1)


def _shrink(value: object) -> object:
    if isinstance(value, list):
        head, tail = ITEMS_KEPT
        if len(value) > head + tail + 1:
            elided = f"[… {len(value) - head - tail} more items …]"
            value = [*value[:head], elided, *value[-tail:]]
        return [_shrink(v) for v in value]
    if isinstance(value, dict):
        items = list(value.items())
        out = {k: _shrink(v) for k, v in items[:KEYS_KEPT]}
        if len(items) > KEYS_KEPT:
            out["…"] = f"{len(items) - KEYS_KEPT} more keys"
        return out
    if isinstance(value, str) and len(value) > STRING_CHARS:
        return f"{value[:STRING_CHARS]}[… {len(value) - STRING_CHARS} more characters]"
    return value


def table_separator(lines: list[str]) -> str | None:
    """The column separator when most lines are rows of one table, else None."""
    sample = [line for line in lines[:50] if line.strip()]
    if len(sample) < 5:
        return None
    for sep in ("|", "\t", ","):
        counts = [line.count(sep) for line in sample]
        first = counts[0]
        if first >= 1 and sum(1 for c in counts if c == first) >= 0.8 * len(counts):
            return sep
    return None


def reduce_table(lines: list[str], sep: str) -> list[str]:
    """Header (and a markdown table's rule), first and last rows, a row counting the rest."""
    header = 2 if len(lines) > 1 and set(lines[1].strip()) <= set("|-: ") else 1
    head, tail = ROWS_KEPT
    rows = lines[header:]
    if len(rows) <= head + tail + 1:
        return lines
    elided = len(rows) - head - tail
    note = f"… {elided} rows elided …"
    row = f"| {note} |" if sep == "|" else note
    return [*lines[:header], *rows[:head], row, *rows[-tail:]]
