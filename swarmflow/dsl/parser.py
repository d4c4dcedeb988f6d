"""Text to syntax tree: lark's LALR parser over grammar.lark, then `AstBuilder`.

The lark parser is built once, on first use, and shared. A syntax error becomes one located
`Diagnostic` written for people (see syntax_errors.py); nothing from lark escapes.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput

from swarmflow.dsl import ast
from swarmflow.dsl.diagnostics import Diagnostic, DslError, Spot
from swarmflow.dsl.lexer import LexError, Newlines, Origin, lexing
from swarmflow.dsl.syntax_errors import describe_lex_error, describe_unexpected
from swarmflow.dsl.syntax_tree import CONSTANTS, AstBuilder, BuildState, build_state

_GRAMMAR = Path(__file__).with_name("grammar.lark")
_parser: Lark | None = None


def get_parser() -> Lark:
    """The shared LALR parser, built on first use (and cached across processes by lark)."""
    global _parser
    if _parser is None:
        _parser = Lark(
            _GRAMMAR.read_text(encoding="utf-8"),
            parser="lalr",
            lexer="contextual",
            postlex=Newlines(),
            start=["start", "expr"],
            maybe_placeholders=True,
            transformer=AstBuilder(),
            cache=True,  # lark keeps the analysed tables in a temp file: loads in a few ms
        )
    return _parser


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
        return None, describe_lex_error(exc, filename)
    except UnexpectedInput as exc:
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
    parts = path.split(".")
    if parts[0] in CONSTANTS:
        return ast.Const(
            value=CONSTANTS[parts[0]],
            line=line,
            column=column,
            end_line=line,
            end_column=column + len(parts[0]),
        )
    node: ast.Expr = ast.Name(
        id=parts[0], line=line, column=column, end_line=line, end_column=column + len(parts[0])
    )
    end = column + len(parts[0])
    for part in parts[1:]:
        end += len(part) + 1
        node = ast.Attribute(
            value=node, attr=part, line=line, column=column, end_line=line, end_column=end
        )
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
