"""Syntax errors written for people: what was found, what would fit, and the likely fix."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache

from lark import Token
from lark.exceptions import UnexpectedInput, UnexpectedToken

from swarmflow.dsl.syntax.ast import OPERATORS
from swarmflow.dsl.syntax.diagnostics import Diagnostic, Spot, did_you_mean, suggest
from swarmflow.dsl.syntax.grammar import Origin, get_parser, tokens

_STATEMENT_STARTS = frozenset({"RETURN", "IF", "SESSION"})
# How a message names a kind of token: when it is expected, and when it is found (`{}`: its text).
# Other tokens are named by their literal text.
_NAMED = {
    "NAME": ("a name", "name '{}'"),
    "EDGE_LIST": ("an edge such as a -> b", "edges '{}'"),
    "NUMBER": ("a number", "number {}"),
    "COST": ("a cost such as $5", "number {}"),
    "STRING": ("a string", "string"),
    "LONG_STRING": ("a string", "string"),
    "_NL": ("a new line", "end of line"),
    "$END": ("the end of the file", "end of the file"),
    "COMP_OP": ("a comparison", "comparison"),
    "MUL_OP": ("'*', '/', '//' or '%'", "'*', '/', '//' or '%'"),
}
_BLOCK_HEADS = frozenset({"IF", "FOR", "REPEAT", "MATCH", "ELSE"})

_PYTHON_HABITS = {
    "def": "steps are written inside `steps { ... }`; there are no function definitions",
    "while": "a loop has a bound: write repeat n { ... } until condition, "
    "or for x in items { ... }",
    "range": "write repeat n { ... } to run a body n times",
    "import": "import Python callables with `use name from package.module`",
    "elif": "write `else if`",
    "lambda": "write a body as |x| { ... }",
    "async": "every step is already concurrent; drop `async`",
    "await": "steps are awaited for you; drop `await`",
    "with": "write `session agent { ... }` for a conversation",
}


@cache
def _starts(rule: str) -> frozenset[str]:
    """The tokens that may begin `rule` (`start` or `expr`), read from the parse table."""
    table = get_parser().parser.parser.parser.parse_table
    found = table.states[table.start_states[rule]]
    return frozenset(t for t in found if t.isupper() and t not in ("_NL", "$END"))


@cache
def _literals() -> dict[str, str]:
    return {t.name: t.pattern.value for t in get_parser().terminals if t.pattern.type == "str"}


def describe_unexpected(
    exc: UnexpectedInput, source: str, filename: str, where: Origin
) -> Diagnostic:
    """A parser error as a diagnostic with the most useful message we can give."""
    if not isinstance(exc, UnexpectedToken):
        place = Spot(*where.offset(source, exc.pos_in_stream or 0))
        message = bad_character(source, exc.pos_in_stream or 0)
        return _diag(filename, place, message, 3 if message.startswith('this """') else 1)
    token: Token = where.place(source, exc.token)  # a token the lexer refused is not placed yet
    before = _tokens_before(source, where, token)
    if token.type == "$END":
        return _at_end(exc, source, filename, where, before)
    unclosed = _unclosed_before(token, before, source, filename) if where == Origin() else None
    if unclosed is not None:
        return unclosed
    opened = _open_brackets(before)
    if token.type in _CLOSERS and opened and before[opened[-1]].type != _CLOSERS[token.type]:
        where_to = f"before the '{token}' on line {token.line}"  # `)` closing a `[`, say
        return _never_closed(filename, before[opened[-1]], where_to)
    spot = token
    if before and before[-1].type == "NAME" and str(before[-1]) in _PYTHON_HABITS:
        spot = before[-1]
    message = _explain(token, _acceptable(exc), before)
    return _diag(filename, spot, message, max(1, len(str(spot))))


_NEW_THINGS = _STATEMENT_STARTS | {"REPEAT", "FOR", "MATCH", "RBRACE"}


_CLOSERS = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}
_CLOSING = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}


def _open_brackets(tokens: list[Token]) -> list[int]:
    """Where the brackets still open after `tokens` are, innermost last."""
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.type in _CLOSING:
            stack.append(i)
        elif tok.type in _CLOSERS and stack:
            stack.pop()
    return stack


def _unclosed_before(
    token: Token, before: list[Token], source: str, filename: str
) -> Diagnostic | None:
    """A bracket or agent block left open on an earlier line, where a new line starts anew."""
    stack = _open_brackets(before)
    if not stack:
        return None
    at = stack[-1]
    opener = before[at]
    if (opener.line or 0) >= (token.line or 0):
        return None
    in_agent = at >= 2 and before[at - 2].type == "AGENT"
    starts_anew = token.type in _NEW_THINGS | _starts("start") or (
        token.type == "NAME" and _assigned(source, token) and not in_agent
    )
    if in_agent and (starts_anew or token.type == "LBRACE"):
        head = before[at - 2]
        message = f"agent '{before[at - 1]}' is never closed; add '}}' before line {token.line}"
        return _diag(filename, head, message, (opener.column or 1) - (head.column or 1) + 1)
    if opener.type != "LBRACE" and starts_anew:
        return _never_closed(filename, opener, f"before line {token.line}")
    return None


def _never_closed(filename: str, opener: Token, where: str) -> Diagnostic:
    closing = _CLOSING[opener.type]
    return _diag(filename, opener, f"this '{opener}' is never closed; add '{closing}' {where}")


def _assigned(source: str, token: Token) -> bool:
    """Whether `name =` (an assignment, not `==`) begins at `token`."""
    rest = source[token.end_pos or 0 :].lstrip(" \t")
    return rest.startswith("=") and not rest.startswith(("==", "=>"))


def _diag(filename: str, where: Token | Spot, message: str, width: int = 1) -> Diagnostic:
    """A syntax error `width` columns wide from where `where` starts."""
    spot = Spot(where.line or 1, where.column or 1, width)
    return Diagnostic.at(spot, "syntax", message, filename)


def _tokens_before(source: str, where: Origin, token: Token) -> list[Token]:
    stop = token.start_pos if token.type != "$END" else None
    found = tokens(source, where)
    if stop is None:
        return found
    return [t for t in found if t.start_pos is None or t.start_pos < stop]


def _at_end(
    exc: UnexpectedToken, source: str, filename: str, where: Origin, before: list[Token]
) -> Diagnostic:
    opened = _open_brackets(before) if where == Origin() else []
    if opened:
        return _never_closed(filename, before[opened[-1]], "to close it")
    last = before[-1] if before else None
    line = last.end_line if last is not None and last.end_line else where.line
    column = last.end_column if last is not None and last.end_column else where.column
    wanted = _expected(_acceptable(exc))
    message = f"the file ends too early; expected {wanted}"
    if where != Origin():
        message = f"this template expression ends too early; expected {wanted}"
    return _diag(filename, Spot(line, column), message)


def _acceptable(exc: UnexpectedToken) -> set[str]:
    """Tokens that would really be accepted here (LALR's lookahead sets over-approximate)."""
    try:
        accepts = exc.accepts
    except Exception:  # the simulation is only a refinement; fall back to lark's own set
        accepts = None
    return set(accepts or exc.expected)


def _explain(token: Token, expected: set[str], before: list[Token]) -> str:
    for hint in _HINTS:
        message = hint(token, expected, before)
        if message:
            return message
    return f"unexpected {describe_token(token)}; expected {_expected(expected)}"


def _unknown_operator(token: Token, expected: set[str], before: list[Token]) -> str | None:
    if token.type != "LBRACE" or not before or before[-1].type != "RPAR":
        return None
    name = _callee(before)
    if name is None:
        return (
            "only parallel(...) takes a { block } after its parentheses; a per-item body "
            "is written |x| { ... }"
        )
    close = suggest(name, OPERATORS)
    if close == "parallel" or name == "parallel":
        return f"unknown operator '{name}'; did you mean 'parallel'? (parallel(n) {{ ... }})"
    return (
        f"{name}(...) cannot take a {{ block }}; give it a body as |x| {{ ... }}"
        f"{did_you_mean(name, OPERATORS) if close else ''}"
    )


def _callee(before: list[Token]) -> str | None:
    depth = 0
    for i in range(len(before) - 1, 0, -1):
        kind = before[i].type
        depth += kind == "RPAR"
        depth -= kind == "LPAR"
        if depth == 0:
            prev = before[i - 1]
            return str(prev) if prev.type == "NAME" else None
    return None


def _lambda_body(token: Token, expected: set[str], before: list[Token]) -> str | None:
    if token.type != "LBRACE" and expected == {"LBRACE"} and before and before[-1].type == "VBAR":
        return "a body is written in braces: |x| { ... }"
    return None


def _keyword_equals(token: Token, expected: set[str], before: list[Token]) -> str | None:
    if token.type == "EQUAL" and _open_kinds(before)[-1:] == ["LPAR"]:
        return "keyword arguments are written name: value, not name = value"
    if token.type == "EQUAL" and before and before[-1].type in ("RPAR", "RSQB", "NAME"):
        return "only a plain name can be assigned: write `name = value` on its own line"
    return None


def _open_kinds(before: list[Token]) -> list[str]:
    """The kinds of the brackets still open after `before`, innermost last."""
    return [before[i].type for i in _open_brackets(before)]


def _python_habit(token: Token, expected: set[str], before: list[Token]) -> str | None:
    for tok in (token, *(before[-1:] if before else ())):
        if tok.type == "NAME" and str(tok) in _PYTHON_HABITS:
            return f"'{tok}' is Python, not .swarm: {_PYTHON_HABITS[str(tok)]}"
    if token.type == "COLON" and before and any(t.type in _BLOCK_HEADS for t in before[-6:]):
        return "blocks are written in braces: if condition { ... }, for x in xs { ... }"
    return None


def _reserved_word(token: Token, expected: set[str], before: list[Token]) -> str | None:
    literal = _literals().get(token.type, "")
    if "NAME" in expected and literal.isidentifier():
        return f"'{literal}' is a reserved word and cannot be used as a name; choose another name"
    return None


def _early_line_end(token: Token, expected: set[str], before: list[Token]) -> str | None:
    if token.type == "_NL":
        return f"this line ends too early; expected {_expected(expected)}"
    if token.type == "RBRACE" and "LBRACE" not in _open_kinds(before):
        return "unmatched '}': there is no '{' for it to close"
    if token.type == "RPAR" and "LPAR" not in _open_kinds(before):
        return "unmatched ')': there is no '(' for it to close"
    return None


_HINTS: tuple[Callable[[Token, set[str], list[Token]], str | None], ...] = (
    _unknown_operator,
    _lambda_body,
    _keyword_equals,
    _python_habit,
    _reserved_word,
    _early_line_end,
)


def describe_token(token: Token) -> str:
    """How to name a token in a message."""
    if token.type in _NAMED:
        return _NAMED[token.type][1].format(token)
    literal = _literals().get(token.type, str(token))
    return f"keyword '{literal}'" if literal.isidentifier() else f"'{literal}'"


def _expected(expected: Iterable[str]) -> str:
    chosen = set(expected) - {"SEMICOLON"}
    words: list[str] = []
    if chosen >= _starts("start"):
        words.append("a declaration (flow, use, budget, agent, edges or steps)")
        chosen -= _starts("start")
    if chosen >= _STATEMENT_STARTS:
        words.append("a statement")
        chosen -= _STATEMENT_STARTS
    if {"NAME", "NUMBER", "STRING"} <= chosen:
        words.append("an expression")
        chosen -= _starts("expr")
    words.extend(sorted({_describe_terminal(t) for t in chosen}))
    if not words:
        return "something else"
    if len(words) > 6:
        words = [*words[:6], "..."]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _describe_terminal(name: str) -> str:
    if name in _NAMED:
        return _NAMED[name][0]
    return f"'{_literals().get(name, name.lower())}'"


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
