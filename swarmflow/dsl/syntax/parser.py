"""Text to syntax tree: lark's LALR parser over grammar.lark, building with `AstBuilder`.

The lark parser (grammar.py, with its post-lexer) is built once, on first use, and shared. A
syntax error becomes one located `Diagnostic` written for people (see errors.py); nothing
from lark escapes. A text larger than the parser reads (a whole file, or one line) is refused
before lark sees it, in one located diagnostic: what lark would cost it grows with its size.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from lark.exceptions import LarkError, UnexpectedInput

from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, DslError, Spot
from swarmflow.dsl.syntax.grammar import (
    MAX_LINE_CHARS,
    MAX_SOURCE_CHARS,
    LexError,
    Origin,
    get_parser,
    lexing,
)
from swarmflow.dsl.syntax.tree import CONSTANTS, BuildState, build_state


def parse_module(
    source: str, filename: str = "<string>"
) -> tuple[ast.Module | None, list[Diagnostic]]:
    """The syntax tree and the problems found; the tree is None after a syntax error."""
    if source.startswith("\ufeff"):  # a byte-order mark: read it as a space, keep columns
        source = " " + source[1:]
    too_large = _too_large(source, filename)
    if too_large is not None:  # refused before lark reads it: what it would cost is unbounded
        return None, [too_large]
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


def _too_large(source: str, filename: str) -> Diagnostic | None:
    """The one problem of a text larger than the parser reads: the whole, or one line."""
    if len(source) > MAX_SOURCE_CHARS:
        return Diagnostic.at(
            Spot(1, 1),
            "syntax",
            f"this file holds {len(source):,} characters, more than the {MAX_SOURCE_CHARS:,} "
            "a .swarm file may hold; split the flow, or move long text into files next to it",
            filename,
        )
    lengths = list(map(len, source.split("\n")))
    if max(lengths) <= MAX_LINE_CHARS:
        return None
    line = next(n for n, length in enumerate(lengths, 1) if length > MAX_LINE_CHARS)
    held = lengths[line - 1]
    return Diagnostic.at(
        Spot(line, MAX_LINE_CHARS + 1),
        "syntax",
        f"line {line} holds {held:,} characters, more than the {MAX_LINE_CHARS:,} a line "
        "may hold; break it (inside ( ) and [ ] a line may break anywhere), or move long text "
        "into a file next to the flow",
        filename,
    )


def _parse(source: str, start: str, filename: str, where: Origin) -> tuple[Any, Diagnostic | None]:
    try:
        with lexing(source, where):
            return get_parser().parse(source, start=start), None
    except LexError as exc:
        return None, Diagnostic.at(exc.token, "syntax", exc.message, filename)
    except UnexpectedInput as exc:
        from swarmflow.dsl.syntax.errors import describe_unexpected  # only after a mistake

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
