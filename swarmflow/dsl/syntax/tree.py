"""The rule callbacks lark calls while it parses: each builds one node of ast.py's tree.

Problems found while building (an unknown unit, a broken string template) are collected as
diagnostics instead of stopping, so that one run reports them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Protocol, TypedDict, TypeVar

from lark import Token, Transformer, v_args

from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, Located, Spot
from swarmflow.dsl.syntax.literals import UnitError, parse_quantity, split_template

HoleParser = Callable[[str, int, int], "ast.Expr | None"]


class Spanned(Protocol):
    """A token or a node: where it starts and ends (lark leaves a token's ends unset until
    it has placed it)."""

    @property
    def line(self) -> int | None: ...

    @property
    def column(self) -> int | None: ...

    @property
    def end_line(self) -> int | None: ...

    @property
    def end_column(self) -> int | None: ...


class Place(TypedDict):
    """A node's position fields."""

    line: int
    column: int
    end_line: int
    end_column: int


def _at(first: Spanned, last: Spanned | None = None) -> Place:
    """Position fields spanning from `first` to `last` (tokens or nodes; lark places every
    token it lexes, so a line or column is never missing here)."""
    last = first if last is None else last
    line, column = first.line or 1, first.column or 1
    end_line = last.end_line or last.line or line
    return {
        "line": line,
        "column": column,
        "end_line": end_line,
        "end_column": last.end_column or last.column or column,
    }


Argument = ast.Expr | ast.Keyword


class Arguments(TypedDict):
    """The `args` and `keywords` fields of a call or a session."""

    args: list[ast.Expr]
    keywords: list[ast.Keyword]


def _arguments(items: list[Argument | None] | None) -> Arguments:
    """The `args` and `keywords` fields of a call or session, from inside its parentheses."""
    given = [x for x in items or () if x is not None]
    keywords = [x for x in given if isinstance(x, ast.Keyword)]
    return {"args": [x for x in given if not isinstance(x, ast.Keyword)], "keywords": keywords}


N = TypeVar("N", bound=ast.Node)


def _only(nodes: list[ast.Node], kind: type[N]) -> list[N]:
    return [n for n in nodes if isinstance(n, kind)]


@dataclass
class BuildState:
    """What one parse collects while lark calls the builder."""

    filename: str
    parse_hole: HoleParser
    problems: list[Diagnostic] = field(default_factory=list)

    def problems_at(self, problems: list[tuple[str, int, int]]) -> None:
        """Problems a string literal had, each at its own place."""
        for message, line, column in problems:
            self.problem(message, Spot(line, column))

    def problem(self, message: str, where: Located, code: str = "syntax") -> None:
        self.problems.append(Diagnostic.at(where, code, message, self.filename))


build_state: ContextVar[BuildState] = ContextVar("swarm_build_state")

Declared = ast.Node | list[ast.BudgetItem] | list[ast.EdgeChain]
"""What a declaration's callback gives: its node, or a `budget` or `edges` line's items."""


@v_args(inline=True)
class AstBuilder(Transformer[Token, ast.Node]):
    """Rule callbacks, one per grammar rule; each builds one node from the rule's children
    (given as arguments: kept tokens, the nodes built below, None for an absent `[...]`).

    lark calls them while it parses (no parse tree is built), so the state of the parse in
    progress lives in `build_state`.
    """

    # -- declarations ------------------------------------------------------------------

    def start(self, *declared: Declared) -> ast.Module:
        nodes = [n for d in declared for n in (d if isinstance(d, list) else [d])]
        return ast.Module(
            line=1,
            column=1,
            end_line=1,
            end_column=1,
            flows=_only(nodes, ast.FlowDecl),
            uses=_only(nodes, ast.UseDecl),
            budget=_only(nodes, ast.BudgetItem),
            agents=_only(nodes, ast.AgentDecl),
            edges=_only(nodes, ast.EdgeChain),
            steps=_only(nodes, ast.Block),
        )

    def flow_decl(
        self, keyword: Token, name: Token, *rest: ast.Param | ast.TypeRef | None
    ) -> ast.FlowDecl:
        params = [p for p in rest if isinstance(p, ast.Param)]
        last = rest[-1] if rest else None
        returns = last if isinstance(last, ast.TypeRef) else None
        named = self._name(name)
        return ast.FlowDecl(
            name=named, params=params, returns=returns, **_at(keyword, returns or named)
        )

    def param(self, name: Token, type_ref: ast.TypeRef, default: ast.Expr | None) -> ast.Param:
        return ast.Param(
            name=self._name(name),
            type=type_ref,
            default=default,
            **_at(name, default or type_ref),
        )

    def type_ref(self, name: Token, *inner: ast.TypeRef | None) -> ast.TypeRef:
        args = [a for a in inner if isinstance(a, ast.TypeRef)]
        return ast.TypeRef(name=str(name), args=args, **_at(name, args[-1] if args else name))

    def use_decl(self, keyword: Token, *rest: ast.UseName | ast.Name) -> ast.UseDecl:
        names = [n for n in rest if isinstance(n, ast.UseName)]
        module = rest[-1]  # the grammar ends a `use` with its dotted module
        assert isinstance(module, ast.Name)
        return ast.UseDecl(names=names, module=module.id, **_at(keyword, module))

    def use_name(self, name: Token, as_: Token | None, alias: Token | None) -> ast.UseName:
        renamed = self._name(alias) if alias is not None else None
        named = self._name(name)
        return ast.UseName(name=named, alias=renamed, **_at(named, renamed or named))

    def dotted(self, *parts: Token) -> ast.Name:
        return ast.Name(id=".".join(parts), **_at(parts[0], parts[-1]))

    def budget_decl(self, keyword: Token, *items: ast.BudgetItem | None) -> list[ast.BudgetItem]:
        return [i for i in items if isinstance(i, ast.BudgetItem)]

    def budget_item(self, key: Token, value: Token) -> ast.BudgetItem:
        return ast.BudgetItem(key=self._name(key), value=self._number(value), **_at(key, value))

    def agent_decl(self, keyword: Token, name: Token, *fields: ast.AgentField) -> ast.AgentDecl:
        kept = [f for f in fields if isinstance(f, ast.AgentField)]
        named = self._name(name)
        return ast.AgentDecl(name=named, fields=kept, **_at(keyword, named))

    def agent_field(self, key: Token, raw: Token | ast.NameList) -> ast.AgentField:
        named = self._name(key)
        value = raw if isinstance(raw, ast.NameList) else self._field_value(raw)
        return ast.AgentField(key=named, value=value, **_at(named, value))

    def _field_value(self, token: Token) -> ast.FieldValue:
        if token.type in ("STRING", "LONG_STRING"):
            texts, _, problems = split_template(token, holes=False)
            build_state.get().problems_at(problems)
            return ast.Str(texts=texts, **_at(token))
        if token.type == "NONE":
            return ast.Const(value=None, **_at(token))
        if token.type in ("NUMBER", "COST"):
            return self._number(token)
        return self._name(token)

    def name_list(self, bracket: Token, *names: Token | None) -> ast.NameList:
        items = [self._name(t) for t in names if t is not None]
        return ast.NameList(items=items, **_at(bracket, items[-1] if items else bracket))

    def edges_decl(
        self, keyword: Token, *items: ast.EdgeChain | Token | None
    ) -> list[ast.EdgeChain]:
        chains: list[ast.EdgeChain] = []
        for item in items:
            if isinstance(item, ast.EdgeChain):
                chains.append(item)
            elif isinstance(item, Token) and item.type == "EDGE_LIST":
                chains.extend(_edge_chains(item))
        return chains

    def chain(self, *names: Token) -> ast.EdgeChain:
        return ast.EdgeChain(names=[self._name(t) for t in names], **_at(names[0], names[-1]))

    def steps_decl(self, keyword: Token, block: ast.Block) -> ast.Block:
        return block

    # -- statements --------------------------------------------------------------------

    def block(self, opening: Token, *rest: ast.Stmt | Token) -> ast.Block:
        stmts = [s for s in rest[:-1] if not isinstance(s, Token)]  # the last is the `}`
        return ast.Block(stmts=stmts, **_at(opening, rest[-1]))

    def assign(self, name: Token, value: ast.Expr) -> ast.Assign:
        return ast.Assign(target=self._name(name), value=value, **_at(name, value))

    def expr_stmt(self, value: ast.Expr) -> ast.ExprStmt:
        return ast.ExprStmt(value=value, **_at(value))

    def return_stmt(self, keyword: Token, value: ast.Expr | None) -> ast.Return:
        return ast.Return(value=value, **_at(keyword, value or keyword))

    def if_stmt(
        self,
        keyword: Token,
        cond: ast.Expr,
        then: ast.Block,
        otherwise: Token | None,
        orelse: ast.Block | ast.If | None,
    ) -> ast.If:
        if isinstance(orelse, ast.If):
            orelse = ast.Block(stmts=[orelse], **_at(orelse))
        return ast.If(cond=cond, then=then, orelse=orelse, **_at(keyword, orelse or then))

    def session_stmt(
        self, keyword: Token, agent: Token, arguments: list[Argument | None] | None, body: ast.Block
    ) -> ast.Session:
        return ast.Session(
            agent=self._name(agent), body=body, **_arguments(arguments), **_at(keyword, body)
        )

    def loop_stmt(self, keyword: Token, *rest: Token | ast.Expr | ast.Block | None) -> ast.Loop:
        # `repeat n {...} [until c]` or `for x in items {...} [until c]`
        head, body, until = rest[:-3], rest[-3], rest[-1]
        over = head[-1]
        assert isinstance(body, ast.Block) and not isinstance(until, Token | ast.Block)
        assert over is not None and not isinstance(over, Token | ast.Block)
        var = self._name(head[0]) if keyword.type == "FOR" and isinstance(head[0], Token) else None
        return ast.Loop(var=var, over=over, body=body, until=until, **_at(keyword, until or body))

    def match_stmt(
        self, keyword: Token, subject: ast.Expr, *rest: ast.Arm | Token | None
    ) -> ast.Match:
        arms = [a for a in rest if isinstance(a, ast.Arm)]
        closing = rest[-1]
        assert closing is not None
        return ast.Match(subject=subject, arms=arms, **_at(keyword, closing))

    def match_arm(self, head: Token, body: ast.Block | ast.Stmt) -> ast.Arm:
        pattern = None
        if head.type == "STRING":
            texts, _, problems = split_template(head, holes=False)
            build_state.get().problems_at(problems)
            pattern = texts[0]
        if not isinstance(body, ast.Block):
            body = ast.Block(stmts=[body], **_at(body))
        return ast.Arm(pattern=pattern, body=body, **_at(head, body))

    else_arm = match_arm

    # -- expressions -------------------------------------------------------------------

    def binary(self, left: ast.Expr, op: Token, right: ast.Expr) -> ast.Binary:
        """`a op b`, one precedence level of the grammar (a chain nests from the left)."""
        if op.type == "COMP_OP" and isinstance(left, ast.Binary) and _is_comparison(left):
            build_state.get().problem(
                "comparisons cannot be chained; write a < b and b < c", op, "syntax"
            )
        return ast.Binary(op=str(op), left=left, right=right, **_at(left, right))

    def unary(self, op: Token, operand: ast.Expr) -> ast.Expr:
        if op.type == "NOT":
            return ast.Unary(op="not", operand=operand, **_at(op, operand))
        if isinstance(operand, ast.Number):  # fold `-3` into a literal: bounds stay known
            return replace(
                operand, value=-operand.value, column=op.column or 1, text="-" + operand.text
            )
        return ast.Unary(op="-", operand=operand, **_at(op, operand))

    def ask(
        self, keyword: Token, prompt: ast.Expr, as_: Token | None, model: Token | None
    ) -> ast.Ask:
        output = self._name(model) if model is not None else None
        return ast.Ask(prompt=prompt, output=output, **_at(keyword, output or prompt))

    def send(self, keyword: Token, each: Token | None, value: ast.Expr) -> ast.Send:
        turn = keyword.type == "SEND"  # `tell` adds the message without a turn
        return ast.Send(value=value, each=each is not None, turn=turn, **_at(keyword, value))

    def name(self, token: Token) -> ast.Name:
        return self._name(token)

    def number(self, token: Token) -> ast.Number:
        return self._number(token)

    def string(self, token: Token) -> ast.Str:
        return self._string(token)

    def const(self, token: Token) -> ast.Const:
        return ast.Const(value=CONSTANTS[str(token)], **_at(token))

    def group(self, opening: Token, value: ast.Expr) -> ast.Expr:
        return value

    def list_(self, bracket: Token, *values: ast.Expr | None) -> ast.ListExpr:
        items = [x for x in values if x is not None]
        return ast.ListExpr(items=items, **_at(bracket, items[-1] if items else bracket))

    def attribute(self, value: ast.Expr, attr: Token) -> ast.Attribute:
        return ast.Attribute(value=value, attr=str(attr), **_at(value, attr))

    def index(self, value: ast.Expr, bracket: Token, index: ast.Expr) -> ast.Index:
        return ast.Index(value=value, index=index, **_at(value, index))

    def call(
        self,
        func: Token,
        arguments: list[Argument | None] | None,
        closing: Token,
        *bodies: ast.Block | ast.Lambda,
    ) -> ast.Call:
        """`f(...) |x| { ... }`; `parallel(n) { ... }` (its block is a body with no names) and
        `budget()` are calls too, so that every later stage has one form for them all."""
        lambdas = [
            ast.Lambda(params=[], body=x, **_at(x)) if isinstance(x, ast.Block) else x
            for x in bodies
        ]
        return ast.Call(
            func=self._name(func),
            lambdas=lambdas,
            **_arguments(arguments),
            **_at(func, lambdas[-1] if lambdas else closing),
        )

    def lambda_(self, bar: Token, *rest: Token | ast.Block) -> ast.Lambda:
        params = [self._name(t) for t in rest[:-1] if isinstance(t, Token)]
        body = rest[-1]  # the grammar ends a lambda with its block
        assert isinstance(body, ast.Block)
        return ast.Lambda(params=params, body=body, **_at(bar, body))

    def arguments(self, *items: Argument | None) -> list[Argument | None]:
        return list(items)

    def keyword(self, name: Token, value: ast.Expr) -> ast.Keyword:
        return ast.Keyword(name=str(name), value=value, **_at(name, value))

    # -- helpers -----------------------------------------------------------------------

    def _name(self, token: Token) -> ast.Name:
        return ast.Name(id=str(token), **_at(token))

    def _number(self, token: Token) -> ast.Number:
        try:
            value, dimension, unit = parse_quantity(str(token))
        except UnitError as exc:
            build_state.get().problem(str(exc), token, "unit")
            value, dimension, unit = 0.0, "count", ""
        return ast.Number(
            value=value, text=str(token), dimension=dimension, unit=unit, **_at(token)
        )

    def _string(self, token: Token) -> ast.Str:
        texts, holes, problems = split_template(token)
        build_state.get().problems_at(problems)
        parse_hole = build_state.get().parse_hole
        found = [parse_hole(text, line, column) for text, line, column in holes]
        values = [v for v in found if v is not None]
        if len(values) != len(texts) - 1:  # a hole failed to parse: keep the text only
            texts, values = ["".join(texts)], []
        return ast.Str(texts=texts, values=values, **_at(token))


CONSTANTS: dict[str, bool | None] = {"true": True, "false": False, "none": None}
_EDGE_PART = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|,|\n")


def _edge_chains(token: Token) -> list[ast.EdgeChain]:
    """The chains of one EDGE_LIST token, each name placed where it sits in the file."""
    chains: list[ast.EdgeChain] = []
    names: list[ast.Name] = []
    line, line_start = token.line or 1, 1 - (token.column or 1)  # offset of column 1
    for found in _EDGE_PART.finditer(str(token)):
        part, at = found.group(), found.start()
        if part == "\n":
            line, line_start = line + 1, found.end()
        elif part == ",":
            chains.append(ast.EdgeChain(names=names, **_at(names[0], names[-1])))
            names = []
        else:
            column = at - line_start + 1
            names.append(
                ast.Name(
                    id=part, line=line, column=column, end_line=line, end_column=column + len(part)
                )
            )
    chains.append(ast.EdgeChain(names=names, **_at(names[0], names[-1])))
    return chains


def _is_comparison(node: ast.Binary) -> bool:
    return node.op in ("==", "!=", "<", "<=", ">", ">=")
