"""String literals: escapes, and `{expr}` holes that make a string a template.

`"Fix {task} (attempt {i + 1})"` has texts `["Fix ", " (attempt ", ")"]` and two holes.
`{{` and `}}` stand for literal braces.
"""

from __future__ import annotations

from typing import Any

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r", "0": "\0"}

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
    cursor = _Cursor(raw[quote:-quote], token.line, token.column + quote)
    problems: list[Problem] = []
    out: list[str] = []
    while not cursor.done:
        out.append(_escape(cursor, problems) if cursor.peek() == "\\" else cursor.take())
    return "".join(out), problems
