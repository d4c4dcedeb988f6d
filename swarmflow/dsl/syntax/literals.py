"""Literals: strings with escapes and `{expr}` holes, and numbers with units.

`"Fix {task} (attempt {i + 1})"` has texts `["Fix ", " (attempt ", ")"]` and two holes.
`{{` and `}}` stand for literal braces. `400k` tokens, `2M`, `30m` of wall time, `$5` of cost.
"""

from __future__ import annotations

import re
from typing import Literal

from lark import Token

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r", "0": "\0"}

_SPECIAL = frozenset("{}\\")
"""Characters that make a string more than its plain text."""
# The pieces of a template: doubled braces, a hole (maybe unclosed), a lone '}', an escape,
# and a run of plain text. A plain string has only escapes and text.
_TEMPLATE = re.compile(r"\{\{|\}\}|\{[^{}]*\}?|\}|\\.?|[^{}\\]+", re.DOTALL)
_PLAIN = re.compile(r"\\.?|[^\\]+", re.DOTALL)
Hole = tuple[str, int, int]
Problem = tuple[str, int, int]


class _Body:
    """A string token's text between its quotes; places offsets, met in order, in the file."""

    def __init__(self, token: Token) -> None:
        raw = str(token)
        quote = 3 if raw.startswith('"""') else 1
        self.text = raw[quote:-quote]
        self.line = token.line or 1  # lark places every token it lexes
        self.line_start = -((token.column or 1) + quote - 1)  # the offset that is column 1
        self.seen = 0

    def place(self, offset: int) -> tuple[int, int]:
        """The line and column of `offset`; offsets must not go backwards."""
        newlines = self.text.count("\n", self.seen, offset)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.seen, offset) + 1
        self.seen = offset
        return self.line, offset - self.line_start + 1


def split_template(
    token: Token, *, holes: bool = True
) -> tuple[list[str], list[Hole], list[Problem]]:
    """Texts between holes (unescaped), holes as (source, line, column), and problems.

    With `holes=False` braces are plain text (agent cards are Jinja templates): one text.
    """
    body = _Body(token)
    if not (_SPECIAL if holes else {"\\"}).intersection(body.text):  # nothing to walk
        return [body.text], [], []
    texts: list[str] = []
    found_holes: list[Hole] = []
    problems: list[Problem] = []
    current: list[str] = []
    for found in (_TEMPLATE if holes else _PLAIN).finditer(body.text):
        piece, at = found.group(), found.start()
        if piece[0] == "\\":
            current.append(_escape(piece, at, body, problems))
        elif not holes or piece[0] not in "{}":
            current.append(piece)
        elif piece in ("{{", "}}"):
            current.append(piece[0])
        elif piece == "}":
            problems.append(
                ("a lone '}' in a string; write '}}' for a literal brace", *body.place(at))
            )
        else:
            texts.append("".join(current))
            current = []
            _hole(piece, at, body, found_holes, problems)
    texts.append("".join(current))
    if len(texts) != len(found_holes) + 1:  # a broken hole: keep the text, drop the holes
        return ["".join(texts)], [], problems
    return texts, found_holes, problems


def _hole(piece: str, at: int, body: _Body, holes: list[Hole], problems: list[Problem]) -> None:
    if not piece.endswith("}"):
        message = "this '{' in a string is never closed; write '{{' for a literal brace"
    elif not piece[1:-1].strip():
        message = "empty '{}' in a string; put a name inside, or write '{{}}' for literal braces"
    else:
        holes.append((piece[1:-1], *body.place(at + 1)))
        return
    problems.append((message, *body.place(at)))


def _escape(piece: str, at: int, body: _Body, problems: list[Problem]) -> str:
    ch = piece[1:]
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    problems.append(
        (
            f"unknown escape '\\{ch}'; use \\n, \\t, \\\" or \\\\ (two backslashes for one)",
            *body.place(at),
        )
    )
    return ch


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


def show_quantity(value: float) -> str:
    """A count in a message's words, with its unit folded back in: `1.6M`, `400k`, `12`."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"
