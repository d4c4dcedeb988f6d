"""Newlines in the `.swarm` language: a small post-lexer after lark's contextual lexer.

The grammar declares every terminal; this only decides what a newline means. Newlines (and
`;`) end statements at the top level and inside `{ }`, are dropped inside `( )` and `[ ]`, and
a newline before `else` or `until` is dropped, so that `}` and `else` may sit on separate
lines. It also bounds how deeply one step nests, which bounds the recursion of every later
stage, and places the tokens of a string template's `{expr}` where they sit in the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from lark import Token
from lark.lark import PostLex

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSERS = frozenset(_OPENERS.values())
_CONTINUATION = re.compile(r"(?:else|until)\b")
# Tokens that make the syntax tree one level deeper without a bracket of their own.
_DEEPENING = frozenset(
    {"OR", "AND", "NOT", "COMP_OP", "PLUS", "MINUS", "MUL_OP", "DOT", "ELSE", "VBAR"}
)
MAX_DEPTH = 150
"""How deep one step may nest; bounds the recursion of every later stage."""


def _keyword_terminals() -> tuple[str, ...]:
    """The grammar's keywords: lexed as keywords everywhere, so that they stay reserved."""
    grammar = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    return tuple(re.findall(r'^([A-Z_]+): "[a-z]+"$', grammar, re.MULTILINE))


class LexError(Exception):
    """Text the post-lexer refuses, with its place."""

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


@dataclass(frozen=True, slots=True)
class _Lexing:
    text: str
    where: Origin


_lexing: ContextVar[_Lexing | None] = ContextVar("swarm_lexing", default=None)


@contextmanager
def lexing(text: str, where: Origin) -> Iterator[None]:
    """Tell the post-lexer which text it reads, and where that text sits in its file."""
    token = _lexing.set(_Lexing(text, where))
    try:
        yield
    finally:
        _lexing.reset(token)


class Newlines(PostLex):
    """The post-lexer lark runs after its contextual lexer."""

    always_accept = ("_NL", "SEMICOLON", *_keyword_terminals())

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return _Pass(_lexing.get() or _Lexing("", Origin())).run(stream)


class _Pass:
    """One pass over the tokens of one text."""

    def __init__(self, lexing: _Lexing) -> None:
        self.text = lexing.text
        self.where = lexing.where
        self.stack: list[str] = ["LPAR"] if self.where.in_parens else []
        self.levels: list[int] = [0] * (len(self.stack) + 1)  # deepening tokens per level
        self.depth = len(self.stack) * 3
        self.ended = True  # the last token sent ended a statement (nothing before: same)

    def run(self, stream: Iterator[Token]) -> Iterator[Token]:
        for token in stream:
            self._place(token)
            if token.type in ("_NL", "SEMICOLON"):
                if self._ends_statement(token):
                    self.ended = True
                    self._reset_level()
                    yield Token.new_borrow_pos("_NL", str(token), token)
                continue
            self.ended = False
            self._bracket(token)
            self._measure(token)
            yield token

    def _ends_statement(self, token: Token) -> bool:
        inside = self.stack[-1] if self.stack else "LBRACE"
        if token.type == "SEMICOLON" and inside != "LBRACE":
            raise LexError(
                "';' ends a statement, so it cannot stand inside ( ) or [ ]",
                token.line or 1,
                token.column or 1,
            )
        if inside != "LBRACE" or self.ended:
            return False
        following = self.text[token.end_pos or 0 :]
        return not (token.type == "_NL" and _CONTINUATION.match(following))

    def _place(self, token: Token) -> None:
        """Shift a template expression's tokens to where the template sits in the file."""
        if self.where.line == 1 and self.where.column == 1:
            return
        for attr in ("line", "end_line"):
            value = getattr(token, attr)
            if value is not None:
                setattr(token, attr, value + self.where.line - 1)
        for attr, line in (("column", "line"), ("end_column", "end_line")):
            if getattr(token, attr) is not None and getattr(token, line) == self.where.line:
                setattr(token, attr, getattr(token, attr) + self.where.column - 1)

    def _bracket(self, token: Token) -> None:
        if token.type in _OPENERS:
            self.stack.append(token.type)
        elif token.type in _CLOSERS and self.stack:
            self.stack.pop()

    def _measure(self, token: Token) -> None:
        """Keep an upper bound of the nesting depth; refuse a step that nests too deeply."""
        kind = token.type
        if kind in _DEEPENING:
            self.levels[-1] += 1
            self.depth += 1
        elif kind in _OPENERS:
            self.levels.append(0)
            self.depth += 3
        elif kind in _CLOSERS and len(self.levels) > 1:
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


def bad_character(text: str, pos: int) -> str:
    """What is wrong where the lexer found no token."""
    if text.startswith('"""', pos):
        return 'this """ string is never closed; end it with """'
    char = text[pos] if pos < len(text) else ""
    if char == '"':
        return (
            'this string is not closed before the end of the line; end it with " '
            'or use """ for text over several lines'
        )
    if char == "'":
        return "strings use double quotes: write \"text\", not 'text'"
    if char == "$":
        return "a cost is written $ followed by digits, such as $5 or $0.50"
    return f"unexpected character {char!r}; it has no meaning in a .swarm file"
