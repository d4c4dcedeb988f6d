"""Literals: strings with escapes and `{expr}` holes, and numbers with units.

`"Fix {task} (attempt {i + 1})"` has texts `["Fix ", " (attempt ", ")"]` and two holes.
`{{` and `}}` stand for literal braces. `400k` tokens, `2M`, `30m` of wall time, `$5` of cost.
"""

from __future__ import annotations

from typing import Any, Literal

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r", "0": "\0"}

_SPECIAL = frozenset("{}\\")
"""Characters that make a string more than its plain text."""
Hole = tuple[str, int, int]
Problem = tuple[str, int, int]


class _Cursor:
    """Walks a token's raw text while keeping its line and column."""

    def __init__(self, raw: str, line: int, column: int) -> None:
        self.raw = raw
        self.pos = 0
        self.line = line
        self.column = column

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.raw[i] if i < len(self.raw) else ""

    def take(self) -> str:
        ch = self.raw[self.pos]
        self.pos += 1
        if ch == "\n":
            self.line, self.column = self.line + 1, 1
        else:
            self.column += 1
        return ch

    @property
    def done(self) -> bool:
        return self.pos >= len(self.raw)


def split_template(token: Any) -> tuple[list[str], list[Hole], list[Problem]]:
    """Texts between holes (unescaped), holes as (source, line, column), and problems."""
    raw = str(token)
    quote = 3 if raw.startswith('"""') else 1
    if not _SPECIAL.intersection(raw):  # plain text: nothing to walk
        return [raw[quote:-quote]], [], []
    cursor = _Cursor(raw[quote:-quote], token.line, token.column + quote)
    texts: list[str] = []
    holes: list[Hole] = []
    problems: list[Problem] = []
    current: list[str] = []
    while not cursor.done:
        ch = cursor.peek()
        if (ch == "{" and cursor.peek(1) == "{") or (ch == "}" and cursor.peek(1) == "}"):
            cursor.take()
            current.append(cursor.take())
        elif ch == "{":
            texts.append("".join(current))
            current = []
            hole = _hole(cursor, problems)
            if hole is not None:
                holes.append(hole)
        elif ch == "}":
            problems.append(
                (
                    "a lone '}' in a string; write '}}' for a literal brace",
                    cursor.line,
                    cursor.column,
                )
            )
            cursor.take()
        elif ch == "\\":
            current.append(_escape(cursor, problems))
        else:
            current.append(cursor.take())
    texts.append("".join(current))
    if len(texts) != len(holes) + 1:  # a broken hole: keep the text, drop the holes
        return ["".join(texts)], [], problems
    return texts, holes, problems


def _hole(cursor: _Cursor, problems: list[Problem]) -> Hole | None:
    start_line, start_column = cursor.line, cursor.column
    cursor.take()
    line, column = cursor.line, cursor.column
    body: list[str] = []
    while not cursor.done and cursor.peek() not in "{}":
        body.append(cursor.take())
    if cursor.peek() != "}":
        problems.append(
            (
                "this '{' in a string is never closed; write '{{' for a literal brace",
                start_line,
                start_column,
            )
        )
        return None
    cursor.take()
    source = "".join(body)
    if not source.strip():
        problems.append(
            (
                "empty '{}' in a string; put a name inside, or write '{{}}' for literal braces",
                start_line,
                start_column,
            )
        )
        return None
    return source, line, column


def _escape(cursor: _Cursor, problems: list[Problem]) -> str:
    line, column = cursor.line, cursor.column
    cursor.take()
    ch = cursor.take() if not cursor.done else ""
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    problems.append(
        (
            f"unknown escape '\\{ch}'; use \\n, \\t, \\\" or \\\\ (two backslashes for one)",
            line,
            column,
        )
    )
    return ch


def plain_text(token: Any) -> tuple[str, list[Problem]]:
    """A string with escapes resolved and braces kept (agent cards are Jinja templates)."""
    raw = str(token)
    quote = 3 if raw.startswith('"""') else 1
    if "\\" not in raw:
        return raw[quote:-quote], []
    cursor = _Cursor(raw[quote:-quote], token.line, token.column + quote)
    problems: list[Problem] = []
    out: list[str] = []
    while not cursor.done:
        out.append(_escape(cursor, problems) if cursor.peek() == "\\" else cursor.take())
    return "".join(out), problems


# -- numbers with units --------------------------------------------------------------------

Dimension = Literal["count", "duration", "cost"]

COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
DURATION_SUFFIXES = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
UNIT_HELP = (
    "use k, M or G for counts (400k, 2M), ms, s, m, h or d for durations (30m), $ for cost ($5)"
)


class UnitError(ValueError):
    """A number carries a suffix that is not a known unit."""


def parse_quantity(text: str) -> tuple[float, Dimension, str]:
    """`(value, dimension, unit)` for a NUMBER or COST token's text."""
    if text.startswith("$"):
        value, unit = _split(text[1:])
        if unit:
            raise UnitError(
                f"cost {text} has an extra suffix '{unit}'; write a cost as $5 or $0.50"
            )
        return value, "cost", "$"
    value, unit = _split(text)
    if unit in COUNT_SUFFIXES:
        return value * COUNT_SUFFIXES[unit], "count", unit
    if unit in DURATION_SUFFIXES:
        return value * DURATION_SUFFIXES[unit], "duration", unit
    raise UnitError(f"unknown unit '{unit}' in {text}; {UNIT_HELP}")


def _split(text: str) -> tuple[float, str]:
    end = len(text) - len(text.lstrip("0123456789._"))
    digits, unit = text[:end].replace("_", ""), text[end:]
    try:
        return float(digits), unit
    except ValueError:
        raise UnitError(f"{text} is not a number") from None


def show_quantity(value: float, dimension: str) -> str:
    """A readable form of a quantity for messages: `1.6M`, `30m`, `$5.00`."""
    if dimension == "cost":
        return f"${value:.2f}"
    if dimension == "duration":
        return _show_duration(value)
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _show_duration(seconds: float) -> str:
    for suffix, scale in (("h", 3600.0), ("m", 60.0)):
        if seconds >= scale and (seconds / scale).is_integer():
            return f"{seconds / scale:g}{suffix}"
    return f"{seconds:g}s"
