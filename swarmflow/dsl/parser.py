"""Text to syntax tree: lark's LALR parser over grammar.lark, building with `AstBuilder`.

The lark parser is built once, on first use, and shared. A syntax error becomes one located
`Diagnostic` written for people (see syntax_errors.py); nothing from lark escapes.

The grammar declares every terminal; the post-lexer here only decides what a newline means.
Newlines (and `;`) end statements at the top level and inside `{ }`, are dropped inside `( )`
and `[ ]`, and a newline before `else` or `until` is dropped, so that `}` and `else` may sit on
separate lines. It also bounds how deeply one step nests, which bounds the recursion of every
later stage, and places the tokens of a string template's `{expr}` where they sit in the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput
from lark.lark import PostLex

from swarmflow.dsl import ast
from swarmflow.dsl.diagnostics import Diagnostic, DslError, Spot
from swarmflow.dsl.syntax_tree import CONSTANTS, AstBuilder, BuildState, build_state

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
        if self.depth > MAX_DEPTH:
            raise LexError(
                f"this step nests too deeply (over {MAX_DEPTH} levels of operators, "
                "brackets and blocks); split it into smaller steps",
                token,
            )

    def _reset_level(self) -> None:
        self.depth -= self.levels[-1]
        self.levels[-1] = 0


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


def parse_module(
    source: str, filename: str = "<string>"
) -> tuple[ast.Module | None, list[Diagnostic]]:
    """The syntax tree and the problems found; the tree is None after a syntax error."""
    if source.startswith("\ufeff"):  # a byte-order mark: read it as a space, keep columns
        source = " " + source[1:]
    state = BuildState(filename, _parse_hole)
    token = build_state.set(state)
    try:
        module, problem = _parse(source, "start", filename, Origin())
    finally:
        build_state.reset(token)
    if problem is not None:
        return None, [*state.problems, problem]
    end = _end_of(source)
    module = replace(module, end_line=end[0], end_column=end[1])
    return module, state.problems


def parse(source: str, filename: str = "<string>") -> ast.Module:
    """The syntax tree of `source`; raises `DslError` with located diagnostics on errors."""
    module, problems = parse_module(source, filename)
    if module is None or any(p.is_error for p in problems):
        raise DslError(problems, source)
    return module


def _parse(source: str, start: str, filename: str, where: Origin) -> tuple[Any, Diagnostic | None]:
    try:
        with lexing(source, where):
            return get_parser().parse(source, start=start), None
    except LexError as exc:
        return None, Diagnostic.at(exc.token, "syntax", exc.message, filename)
    except UnexpectedInput as exc:
        from swarmflow.dsl.syntax_errors import describe_unexpected  # only after a mistake

        return None, describe_unexpected(exc, source, filename, where)
    except (LarkError, RecursionError) as exc:  # anything else lark raises: still located
        return None, _fallback(exc, filename, where)


def _parse_hole(text: str, line: int, column: int) -> Any:
    """Parse one `{expr}` of a string template, placed where it sits in the file."""
    simple = _SIMPLE_HOLE.fullmatch(text)
    if simple is not None:  # most holes are a name or a dotted path: skip the parser
        return _dotted(simple.group(1), line, column + simple.start(1))
    state = build_state.get()
    node, problem = _parse(text, "expr", state.filename, Origin(line, column, in_parens=True))
    if problem is not None:
        state.problems.append(problem)
        return None
    return node


_SIMPLE_HOLE = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*)\s*")


def _dotted(path: str, line: int, column: int) -> ast.Expr:
    """`a.b.c` as the parser would build it, each node spanning from `a` to its own end."""
    head, *rest = path.split(".")
    end = column + len(head)
    at = {"line": line, "column": column, "end_line": line}
    node: ast.Expr = (
        ast.Const(value=CONSTANTS[head], end_column=end, **at)
        if head in CONSTANTS
        else ast.Name(id=head, end_column=end, **at)
    )
    for part in rest:
        end += len(part) + 1
        node = ast.Attribute(value=node, attr=part, end_column=end, **at)
    return node


def _fallback(exc: BaseException, filename: str, where: Origin) -> Diagnostic:
    line = getattr(exc, "line", None) or where.line
    column = getattr(exc, "column", None) or where.column
    message = "this file nests too deeply to read; split long expressions into steps"
    if not isinstance(exc, RecursionError):
        message = f"cannot read this: {exc}"
    return Diagnostic.at(Spot(int(line), int(column)), "syntax", message, filename)


def _end_of(source: str) -> tuple[int, int]:
    lines = source.split("\n")
    return len(lines), len(lines[-1]) + 1


def tokens(source: str, where: Origin | None = None) -> list[Token]:
    """Every token of `source` as the parser sees it, up to the first unreadable one."""
    out: list[Token] = []
    try:
        with lexing(source, where or Origin()):
            out.extend(get_parser().lex(source))
    except (LexError, UnexpectedCharacters):
        pass  # the tokens before an unreadable character are what error hints need
    return out
