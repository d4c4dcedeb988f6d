"""Small text helpers shared by the report's sections."""

from __future__ import annotations

import json


def table(rows: list[tuple[str, ...]], right: tuple[int, ...] = ()) -> str:
    """Rows as aligned columns, indented by two spaces."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return "\n".join(lines)


def clip(text: str, width: int) -> str:
    """One line of at most `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def share(value: float | None) -> str:
    """A share as a percentage, or `-` when there is nothing to measure."""
    return "-" if value is None else f"{value:.0%}"


def as_json(value: object) -> str:
    """A value as compact JSON (text as itself)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
