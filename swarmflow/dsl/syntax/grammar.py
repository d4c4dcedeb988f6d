"""grammar.lark as a lark parser: the post-lexer, the shared LALR parser, and its tokens.

The grammar declares every terminal; the post-lexer here only decides what a newline means.
Newlines (and `;`) end statements at the top level and inside `{ }`, are dropped inside `( )`
and `[ ]`, and a newline before `else` or `until` is dropped, so that `}` and `else` may sit on
separate lines. It also bounds how deeply one step nests, which bounds the recursion of every
later stage, bounds how long one string may be, and places the tokens of a string template's
`{expr}` where they sit in the file. The sizes a text may have at all (`MAX_SOURCE_CHARS`,
`MAX_LINE_CHARS`) are checked before lark reads it (parser.py).

The parser (parser.py) and the syntax errors (errors.py) both read the grammar through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters
from lark.lark import PostLex

from swarmflow.dsl.syntax.tree import AstBuilder

_GRAMMAR = Path(__file__).with_name("grammar.lark")

# -- the post-lexer ------------------------------------------------------------------------

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSERS = frozenset(_OPENERS.values())
_CONTINUATION = re.compile(r"(?:else|until)\b")
# Tokens that make the syntax tree one level deeper without a bracket of their own.
_DEEPENING = frozenset(
    {"OR", "AND", "NOT", "COMP_OP", "PLUS", "MINUS", "MUL_OP", "DOT", "ELSE", "VBAR"}
)
MAX_DEPTH = 150
"""How deep one step may nest; bounds the recursion of every later stage."""
MAX_SOURCE_CHARS = 4_000_000
"""The most characters a `.swarm` text may hold (a file of 200,000 edges holds 2.8 million)."""
MAX_LINE_CHARS = 100_000
"""The most characters one line may hold (a line that long was generated: a list or a call may
break over lines inside its brackets)."""
MAX_STRING_CHARS = 50_000
"""The most characters between a string's quotes (a long role card can be a file instead); half
a line's most, so that any string may stand on one line."""
_STRINGS = {"STRING": 2, "LONG_STRING": 6}
"""The string tokens, with the length of their quotes."""


def _keyword_terminals() -> tuple[str, ...]:
    """The grammar's keywords: lexed as keywords everywhere, so that they stay reserved."""
    grammar = _GRAMMAR.read_text(encoding="utf-8")
    return tuple(re.findall(r'^([A-Z_]+): "[a-z]+"$', grammar, re.MULTILINE))


class LexError(Exception):
    """Text the post-lexer refuses, at the token where it stopped."""

    def __init__(self, message: str, token: Token) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the text being lexed starts in its file (string templates lex a slice)."""

    line: int = 1
    column: int = 1
    in_parens: bool = False

    def place(self, text: str, token: Token) -> Token:
        """Move `token`, lexed from `text`, to where it sits in the file (from its offsets)."""
        if self != Origin() and token.start_pos is not None and token.end_pos is not None:
            token.line, token.column = self.offset(text, token.start_pos)
            token.end_line, token.end_column = self.offset(text, token.end_pos)
        return token

    def offset(self, text: str, pos: int) -> tuple[int, int]:
        """The line and column in the file of offset `pos` of `text`."""
        line_start = text.rfind("\n", 0, pos) + 1
        if not line_start:
            return self.line, self.column + pos
        return self.line + text.count("\n", 0, pos), pos - line_start + 1


_lexing: ContextVar[tuple[str, Origin]] = ContextVar("swarm_lexing", default=("", Origin()))


@contextmanager
def lexing(text: str, where: Origin) -> Iterator[None]:
    """Tell the post-lexer which text it reads, and where that text sits in its file."""
    token = _lexing.set((text, where))
    try:
        yield
    finally:
        _lexing.reset(token)


class Newlines(PostLex):
    """The post-lexer lark runs after its contextual lexer."""

    always_accept = ("_NL", "SEMICOLON", *_keyword_terminals())

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return _Pass(*_lexing.get()).run(stream)


class _Pass:
    """One pass over the tokens of one text."""

    def __init__(self, text: str, where: Origin) -> None:
        self.text = text
        self.where = where
        self.placing = where != Origin()  # decided once: this runs for every token
        self.stack: list[str] = ["LPAR"] if self.where.in_parens else []
        self.levels: list[int] = [0] * (len(self.stack) + 1)  # deepening tokens per level
        self.depth = len(self.stack) * 3
        self.ended = True  # the last token sent ended a statement (nothing before: same)

    def run(self, stream: Iterator[Token]) -> Iterator[Token]:
        for token in stream:
            if self.placing:
                self.where.place(self.text, token)
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
            raise LexError("';' ends a statement, so it cannot stand inside ( ) or [ ]", token)
        if inside != "LBRACE" or self.ended:
            return False
        following = _CONTINUATION.match(self.text, token.end_pos or 0)  # no copy of the rest
        return not (token.type == "_NL" and following)

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
        elif kind in _STRINGS:
            _check_length(token, len(token) - _STRINGS[kind])
        if self.depth > MAX_DEPTH:
            raise LexError(
                f"this step nests too deeply (over {MAX_DEPTH} levels of operators, "
                "brackets and blocks); split it into smaller steps",
                token,
            )

    def _reset_level(self) -> None:
        self.depth -= self.levels[-1]
        self.levels[-1] = 0


def _check_length(token: Token, length: int) -> None:
    if length > MAX_STRING_CHARS:
        raise LexError(
            f"this string holds {length:,} characters, more than the {MAX_STRING_CHARS:,} a "
            "string may hold; keep long text in a file next to the flow (a role card may be "
            'one: card "coder.md")',
            token,
        )


# -- the parser ----------------------------------------------------------------------------


@cache
def get_parser() -> Lark:
    """The shared LALR parser, built on first use (and cached across processes by lark)."""
    return Lark(
        _GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        postlex=Newlines(),
        start=["start", "expr"],
        maybe_placeholders=True,
        transformer=AstBuilder(),
        cache=True,  # lark keeps the analysed tables in a temp file: loads in a few ms
    )


def tokens(source: str, where: Origin | None = None) -> list[Token]:
    """Every token of `source` as the parser sees it, up to the first unreadable one."""
    out: list[Token] = []
    try:
        with lexing(source, where or Origin()):
            out.extend(get_parser().lex(source))
    except (LexError, UnexpectedCharacters):
        pass  # the tokens before an unreadable character are what error hints need
    return out
