"""The `.swarm` tokenizer, plugged into lark's LALR parser as a custom lexer.

It is hand-written for speed (one compiled regex, no per-token state machine) and because
newlines mean different things in different places: they end statements at the top level and
inside `{ }`, they are ignored inside `( )` and `[ ]`, and a newline before `else` is dropped so
that `}` and `else` may sit on separate lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

from lark import Token
from lark.lexer import Lexer

_MASTER = re.compile(
    r"""
     (?P<WS>[ \t\f\r]+)
    |(?P<NL>(?:\r?\n[ \t\f\r]*(?:\#[^\n]*)?)+)
    |(?P<COMMENT>\#[^\n]*)
    |(?P<CONT>\\\r?\n)
    |(?P<LONG_STRING>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\")
    |(?P<OPEN_LONG>\"\"\")
    |(?P<STRING>"(?:[^"\\\n]|\\.)*")
    |(?P<OPEN_STRING>")
    |(?P<NUMBER>[0-9][0-9_]*(?:\.[0-9]+)?[A-Za-z_][A-Za-z_0-9]*|[0-9][0-9_]*(?:\.[0-9]+)?)
    |(?P<COST>\$[0-9][0-9_]*(?:\.[0-9]+)?[A-Za-z_0-9]*)
    |(?P<NAME>[A-Za-z_][A-Za-z_0-9]*)
    |(?P<OP>->|=>|==|!=|<=|>=|//|[-+*/%<>=(){}\[\],.:;|])
    |(?P<BAD>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_COMPARISONS = frozenset({"==", "!=", "<=", ">=", "<", ">"})
_MULTIPLY = frozenset({"*", "/", "//", "%"})
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(")]}")
_CONTINUATIONS = frozenset({"ELSE", "UNTIL"})
# Tokens that make the syntax tree one level deeper without a bracket of their own.
_DEEPENING = frozenset(
    {"OR", "AND", "NOT", "COMP_OP", "PLUS", "MINUS", "MUL_OP", "DOT", "ELSE", "VBAR"}
)
MAX_DEPTH = 150
"""How deep one step may nest; bounds the recursion of every later stage."""


class LexError(Exception):
    """A character or string the tokenizer cannot read, with its place."""

    def __init__(self, message: str, line: int, column: int, width: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.width = width


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the text being lexed starts in its file (string templates lex a slice)."""

    line: int = 1
    column: int = 1
    in_parens: bool = False


origin: ContextVar[Origin | None] = ContextVar("swarm_lex_origin", default=None)


class SwarmLexer(Lexer):
    """Tokens for the grammar in grammar.lark; keyword and punctuation names come from it."""

    __future_interface__: ClassVar[int] = 2

    def __init__(self, lexer_conf: Any) -> None:
        self.names: dict[str, str] = {}
        for terminal in lexer_conf.terminals:
            if terminal.pattern.type == "str":
                self.names[terminal.pattern.value] = terminal.name

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Token]:
        text = lexer_state.text
        return _Scan(self.names, origin.get() or Origin()).run(getattr(text, "text", text))


class _Scan:
    """One pass over one text."""

    def __init__(self, names: dict[str, str], where: Origin) -> None:
        self.names = names
        self.line = where.line
        self.line_start = 1 - where.column  # so that column = pos - line_start + 1
        self.stack: list[str] = ["("] if where.in_parens else []
        self.pending: Token | None = None
        self.levels: list[int] = [0] * (len(self.stack) + 1)  # deepening tokens per level
        self.depth = len(self.stack) * 3

    def run(self, text: str) -> Iterator[Token]:
        for match in _MASTER.finditer(text):
            kind = match.lastgroup or "BAD"
            if kind in ("WS", "COMMENT"):
                continue
            token = self._token(kind, match)
            if token is None:
                continue
            if self.pending is not None:
                if token.type not in _CONTINUATIONS:  # `}` newline `else`: not an end
                    self._reset_level()
                    yield self.pending
                self.pending = None
            self._measure(token)
            yield token
        if self.pending is not None:
            yield self.pending

    def _token(self, kind: str, match: re.Match[str]) -> Token | None:
        value, start = match.group(), match.start()
        if kind in ("NL", "CONT"):
            self._newline(kind, value, start)
            return None
        column = start - self.line_start + 1
        if value == ";" and kind == "OP":
            self._semicolon(start, column)
            return None
        if kind == "NAME":
            kind = self.names.get(value, "NAME")
        elif kind == "OP":
            kind = self._punctuation(value)
        elif kind in ("BAD", "OPEN_STRING", "OPEN_LONG"):
            raise _bad(kind, value, self.line, column)
        token = Token(
            kind,
            value,
            start,
            self.line,
            column,
            self.line,
            column + len(value),
            start + len(value),
        )
        if kind == "LONG_STRING" and "\n" in value:
            self._advance(value, start)
            token.end_line, token.end_column = self.line, start + len(value) - self.line_start + 1
        return token

    def _measure(self, token: Token) -> None:
        """Keep an upper bound of the nesting depth; refuse a step that nests too deeply."""
        kind = token.type
        if kind in _DEEPENING:
            self.levels[-1] += 1
            self.depth += 1
        elif kind in ("LPAR", "LSQB", "LBRACE"):
            self.levels.append(0)
            self.depth += 3
        elif kind in ("RPAR", "RSQB", "RBRACE") and len(self.levels) > 1:
            self.depth -= self.levels.pop() + 3
        elif kind == "COMMA":
            self._reset_level()
        if self.depth > MAX_DEPTH:
            raise LexError(
                f"this step nests too deeply (over {MAX_DEPTH} levels of operators, "
                "brackets and blocks); split it into smaller steps",
                token.line or 1,
                token.column or 1,
                len(token),
            )

    def _reset_level(self) -> None:
        self.depth -= self.levels[-1]
        self.levels[-1] = 0

    def _semicolon(self, start: int, column: int) -> None:
        """`;` ends a statement like a newline does (and merges with the newlines around it)."""
        if self.stack and self.stack[-1] != "{":
            raise LexError(
                "';' ends a statement, so it cannot stand inside ( ) or [ ]", self.line, column
            )
        if self.pending is None:
            self.pending = Token(
                "_NL", ";", start, self.line, column, self.line, column + 1, start + 1
            )

    def _newline(self, kind: str, value: str, start: int) -> None:
        top = self.stack[-1] if self.stack else "{"
        if kind == "NL" and top == "{" and self.pending is None:
            column = start - self.line_start + 1
            self.pending = Token(
                "_NL", value, start, self.line, column, self.line, column + 1, start + 1
            )
        self._advance(value, start)

    def _advance(self, value: str, start: int) -> None:
        self.line += value.count("\n")
        self.line_start = start + value.rindex("\n") + 1

    def _punctuation(self, value: str) -> str:
        if value in _OPENERS:
            self.stack.append(value)
        elif value in _CLOSERS and self.stack:
            self.stack.pop()
        if value in _COMPARISONS:
            return "COMP_OP"
        if value in _MULTIPLY:
            return "MUL_OP"
        return self.names[value]


def _bad(kind: str, value: str, line: int, column: int) -> LexError:
    if kind == "OPEN_STRING":
        return LexError(
            'this string is not closed before the end of the line; end it with " '
            'or use """ for text over several lines',
            line,
            column,
        )
    if kind == "OPEN_LONG":
        return LexError('this """ string is never closed; end it with """', line, column, 3)
    if value == "'":
        return LexError("strings use double quotes: write \"text\", not 'text'", line, column)
    if value == "$":
        return LexError("a cost is written $ followed by digits, such as $5 or $0.50", line, column)
    shown = repr(value)
    return LexError(
        f"unexpected character {shown}; it has no meaning in a .swarm file", line, column
    )


def scan(text: str, names: dict[str, str], where: Origin | None = None) -> Iterator[Token]:
    """The tokens of `text`, as the parser sees them."""
    return _Scan(names, where or Origin()).run(text)


def unclosed_brackets(text: str) -> list[tuple[str, int, int]]:
    """Brackets opened and never closed, as `(char, line, column)`; for syntax-error hints."""
    stack: list[tuple[str, int, int]] = []
    line, line_start = 1, 0
    for match in _MASTER.finditer(text):
        kind, value, start = match.lastgroup, match.group(), match.start()
        if kind == "OP" and value in _OPENERS:
            stack.append((value, line, start - line_start + 1))
        elif kind == "OP" and value in _CLOSERS and stack:
            stack.pop()
        if "\n" in value and kind in ("NL", "CONT", "LONG_STRING"):
            line += value.count("\n")
            line_start = start + value.rindex("\n") + 1
    return stack
