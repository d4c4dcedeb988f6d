"""The rule callbacks lark calls while it parses: each builds one node of ast.py's tree.

Problems found while building (an unknown unit, a broken string template) are collected as
diagnostics instead of stopping, so that one run reports them all.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from lark import Token, Transformer

from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, Spot
from swarmflow.dsl.syntax.literals import UnitError, parse_quantity, split_template

HoleParser = Callable[[str, int, int], Any]


def _at(first: Any, last: Any | None = None) -> dict[str, Any]:
    """Position fields spanning from `first` to `last` (tokens or nodes)."""
    last = first if last is None else last
    return {
        "line": first.line,
        "column": first.column,
        "end_line": last.end_line or last.line,
        "end_column": last.end_column or last.column,
    }


def _arguments(items: list[Any] | None) -> dict[str, Any]:
    """The `args` and `keywords` fields of a call or session, from inside its parentheses."""
    items = [x for x in items or () if x is not None]
    keywords = [x for x in items if isinstance(x, ast.Keyword)]
    return {"args": [x for x in items if not isinstance(x, ast.Keyword)], "keywords": keywords}


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

    def problem(self, message: str, where: Any, code: str = "syntax") -> None:
        self.problems.append(Diagnostic.at(where, code, message, self.filename))


build_state: ContextVar[BuildState] = ContextVar("swarm_build_state")


class AstBuilder(Transformer[Token, Any]):
    """Rule callbacks, one per grammar rule; each builds one node.

    lark calls them while it parses (no parse tree is built), so the state of the parse in
    progress lives in `build_state`.
    """

    # -- declarations ------------------------------------------------------------------

    def start(self, items: list[Any]) -> ast.Module:
        # Each declaration's callback names the Module field it belongs to.
        groups: dict[str, list[Any]] = defaultdict(list)
        for key, value in items:
            groups[key].extend(value if isinstance(value, list) else [value])
        return ast.Module(line=1, column=1, end_line=1, end_column=1, **groups)

    def flow_decl(self, c: list[Any]) -> tuple[str, ast.FlowDecl]:
        params = [p for p in c if isinstance(p, ast.Param)]
        returns = c[-1] if isinstance(c[-1], ast.TypeRef) else None
        name = self._name(c[1])
        return "flows", ast.FlowDecl(
            name=name, params=params, returns=returns, **_at(c[0], returns or name)
        )

    def param(self, c: list[Any]) -> ast.Param:
        name, type_ref, default = self._name(c[0]), c[1], c[2]
        return ast.Param(
            name=name, type=type_ref, default=default, **_at(c[0], default or type_ref)
        )

    def type_ref(self, c: list[Any]) -> ast.TypeRef:
        args = [a for a in c[1:] if isinstance(a, ast.TypeRef)]
        return ast.TypeRef(name=str(c[0]), args=args, **_at(c[0], args[-1] if args else c[0]))

    def use_decl(self, c: list[Any]) -> tuple[str, ast.UseDecl]:
        names = [n for n in c if isinstance(n, ast.UseName)]
        module: ast.Name = c[-1]
        return "uses", ast.UseDecl(names=names, module=module.id, **_at(c[0], module))

    def use_name(self, c: list[Any]) -> ast.UseName:
        alias = self._name(c[2]) if c[2] is not None else None
        name = self._name(c[0])
        return ast.UseName(name=name, alias=alias, **_at(name, alias or name))

    def dotted(self, c: list[Token]) -> ast.Name:
        return ast.Name(id=".".join(c), **_at(c[0], c[-1]))

    def budget_decl(self, c: list[Any]) -> tuple[str, list[ast.BudgetItem]]:
        return "budget", [i for i in c[1:] if isinstance(i, ast.BudgetItem)]

    def budget_item(self, c: list[Token]) -> ast.BudgetItem:
        return ast.BudgetItem(key=self._name(c[0]), value=self._number(c[1]), **_at(c[0], c[1]))

    def agent_decl(self, c: list[Any]) -> tuple[str, ast.AgentDecl]:
        fields = [f for f in c[2:] if isinstance(f, ast.AgentField)]
        name = self._name(c[1])
        return "agents", ast.AgentDecl(name=name, fields=fields, **_at(c[0], name))

    def agent_field(self, c: list[Any]) -> ast.AgentField:
        key, raw = self._name(c[0]), c[1]
        value = raw if isinstance(raw, ast.NameList) else self._field_value(raw)
        return ast.AgentField(key=key, value=value, **_at(key, value))

    def _field_value(self, token: Token) -> Any:
        if token.type in ("STRING", "LONG_STRING"):
            texts, _, problems = split_template(token, holes=False)
            build_state.get().problems_at(problems)
            return ast.Str(texts=texts, **_at(token))
        if token.type == "NONE":
            return ast.Const(value=None, **_at(token))
        if token.type in ("NUMBER", "COST"):
            return self._number(token)
        return self._name(token)

    def name_list(self, c: list[Any]) -> ast.NameList:
        items = [self._name(t) for t in c[1:] if t is not None]
        return ast.NameList(items=items, **_at(c[0], items[-1] if items else c[0]))

    def edges_decl(self, c: list[Any]) -> tuple[str, list[ast.EdgeChain]]:
        chains: list[ast.EdgeChain] = []
        for item in c[1:]:
            if isinstance(item, ast.EdgeChain):
                chains.append(item)
            elif isinstance(item, Token) and item.type == "EDGE_LIST":
                chains.extend(_edge_chains(item))
        return "edges", chains

    def chain(self, c: list[Token]) -> ast.EdgeChain:
        return ast.EdgeChain(names=[self._name(t) for t in c], **_at(c[0], c[-1]))

    def steps_decl(self, c: list[Any]) -> tuple[str, ast.Block]:
        return "steps", c[1]

    # -- statements --------------------------------------------------------------------

    def block(self, c: list[Any]) -> ast.Block:
        stmts = c[1:-1]
        return ast.Block(stmts=stmts, **_at(c[0], c[-1]))

    def assign(self, c: list[Any]) -> ast.Assign:
        return ast.Assign(target=self._name(c[0]), value=c[1], **_at(c[0], c[1]))

    def expr_stmt(self, c: list[Any]) -> ast.ExprStmt:
        return ast.ExprStmt(value=c[0], **_at(c[0]))

    def return_stmt(self, c: list[Any]) -> ast.Return:
        return ast.Return(value=c[1], **_at(c[0], c[1] or c[0]))

    def if_stmt(self, c: list[Any]) -> ast.If:
        orelse = c[4]
        if isinstance(orelse, ast.If):
            orelse = ast.Block(stmts=[orelse], **_at(orelse))
        return ast.If(cond=c[1], then=c[2], orelse=orelse, **_at(c[0], orelse or c[2]))

    def session_stmt(self, c: list[Any]) -> ast.Session:
        return ast.Session(agent=self._name(c[1]), body=c[3], **_arguments(c[2]), **_at(c[0], c[3]))

    def loop_stmt(self, c: list[Any]) -> ast.Loop:
        until = c[-1]
        if c[0].type == "REPEAT":
            var, over, body = None, c[1], c[2]
        else:
            var, over, body = self._name(c[1]), c[3], c[4]
        return ast.Loop(var=var, over=over, body=body, until=until, **_at(c[0], until or body))

    def match_stmt(self, c: list[Any]) -> ast.Match:
        arms = [a for a in c[2:] if isinstance(a, ast.Arm)]
        return ast.Match(subject=c[1], arms=arms, **_at(c[0], c[-1]))

    def match_arm(self, c: list[Any]) -> ast.Arm:
        head, body = c[0], c[-1]
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

    def binary(self, c: list[Any]) -> Any:
        """`a op b op c`, one precedence level of the grammar: folded from the left."""
        left = c[0]
        for op, right in zip(c[1::2], c[2::2], strict=True):
            if op.type == "COMP_OP" and isinstance(left, ast.Binary) and _is_comparison(left):
                build_state.get().problem(
                    "comparisons cannot be chained; write a < b and b < c", op, "syntax"
                )
            left = ast.Binary(op=str(op), left=left, right=right, **_at(left, right))
        return left

    def unary(self, c: list[Any]) -> Any:
        op, operand = c
        if op.type == "NOT":
            return ast.Unary(op="not", operand=operand, **_at(op, operand))
        if isinstance(operand, ast.Number):  # fold `-3` into a literal: bounds stay known
            return replace(operand, value=-operand.value, column=op.column, text="-" + operand.text)
        return ast.Unary(op="-", operand=operand, **_at(op, operand))

    def ask(self, c: list[Any]) -> ast.Ask:
        output = self._name(c[3]) if c[3] is not None else None
        return ast.Ask(prompt=c[1], output=output, **_at(c[0], output or c[1]))

    def send(self, c: list[Any]) -> ast.Send:
        turn = c[0].type == "SEND"  # `tell` adds the message without a turn
        return ast.Send(value=c[2], each=c[1] is not None, turn=turn, **_at(c[0], c[2]))

    def name(self, c: list[Token]) -> ast.Name:
        return self._name(c[0])

    def number(self, c: list[Token]) -> ast.Number:
        return self._number(c[0])

    def string(self, c: list[Token]) -> ast.Str:
        return self._string(c[0])

    def const(self, c: list[Token]) -> ast.Const:
        return ast.Const(value=CONSTANTS[str(c[0])], **_at(c[0]))

    def group(self, c: list[Any]) -> Any:
        return c[1]

    def list_(self, c: list[Any]) -> ast.ListExpr:
        items = [x for x in c[1:] if x is not None]
        return ast.ListExpr(items=items, **_at(c[0], items[-1] if items else c[0]))

    def attribute(self, c: list[Any]) -> ast.Attribute:
        return ast.Attribute(value=c[0], attr=str(c[1]), **_at(c[0], c[1]))

    def index(self, c: list[Any]) -> ast.Index:
        return ast.Index(value=c[0], index=c[2], **_at(c[0], c[2]))

    def call(self, c: list[Any]) -> ast.Call:
        """`f(...) |x| { ... }`; `parallel(n) { ... }` (its block is a body with no names) and
        `budget()` are calls too, so that every later stage has one form for them all."""
        lambdas = [
            ast.Lambda(params=[], body=x, **_at(x)) if isinstance(x, ast.Block) else x
            for x in c[3:]
        ]
        return ast.Call(
            func=self._name(c[0]),
            lambdas=lambdas,
            **_arguments(c[1]),
            **_at(c[0], lambdas[-1] if lambdas else c[2]),
        )

    def lambda_(self, c: list[Any]) -> ast.Lambda:
        params = [self._name(t) for t in c[1:-1] if isinstance(t, Token)]
        return ast.Lambda(params=params, body=c[-1], **_at(c[0], c[-1]))

    def arguments(self, c: list[Any]) -> list[Any]:
        return c

    def keyword(self, c: list[Any]) -> ast.Keyword:
        return ast.Keyword(name=str(c[0]), value=c[1], **_at(c[0], c[1]))

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
        values = [parse_hole(text, line, column) for text, line, column in holes]
        values = [v for v in values if v is not None]
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
