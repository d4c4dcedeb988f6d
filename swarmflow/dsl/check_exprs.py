"""Checks of expressions: names, attributes, operators, templates, `parallel`, `ask`/`send`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarmflow.dsl import ast
from swarmflow.dsl.check_calls import PARALLEL_KEYWORDS, CallChecker
from swarmflow.dsl.check_context import CALLABLE_BUILTINS
from swarmflow.dsl.check_scope import Spend
from swarmflow.dsl.diagnostics import did_you_mean
from swarmflow.dsl.values import (
    AGENT,
    BOOL,
    CALLABLE,
    LIST,
    MODEL,
    NONE,
    NUMBER,
    OUTCOMES,
    OUTPUT,
    OUTPUT_CONTENT,
    OUTPUT_FIELDS,
    SNAPSHOT,
    SNAPSHOT_FIELDS,
    STRING,
    UNKNOWN,
    Value,
    merge,
    number,
    sources_of,
)

_PARAM_TYPES = {"str": STRING, "int": NUMBER, "float": NUMBER, "bool": BOOL, "list": LIST}
_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%"})
_ORDERING = frozenset({"<", "<=", ">", ">="})
_NOT_ARITHMETIC = frozenset({OUTPUT, SNAPSHOT, OUTCOMES, NONE, BOOL, MODEL})


class ExprChecker(CallChecker):
    """`infer(node)`: the value of an expression, reporting what is wrong with it."""

    def infer(self, node: Any, *, callable_ok: bool = False) -> Value:
        if isinstance(node, ast.Name):
            return self.name(node, callable_ok)
        method = _DISPATCH.get(type(node))
        if method is None:  # a Lambda in a value position, say: already reported elsewhere
            return Value()
        return method(self, node)

    def name(self, node: ast.Name, callable_ok: bool) -> Value:
        found = self.scope.lookup(node.id)
        if found is not None:
            if found.partial is not None:
                self.ctx.warning(
                    "maybe-unassigned",
                    f"'{node.id}' may have no value here: it is only assigned in {found.partial}",
                    node,
                )
            return found.value
        param = self.ctx.params.get(node.id)
        if param is not None:
            return Value(_PARAM_TYPES.get(param.type.name, UNKNOWN))
        return self._global(node, callable_ok)

    def _global(self, node: ast.Name, callable_ok: bool) -> Value:
        name = node.id
        if name in self.ctx.imports:
            return Value(CALLABLE)
        if name in self.ctx.agents:
            if callable_ok:
                self.ctx.used_agents.add(name)
                return Value(AGENT)
            self.ctx.error(
                "misuse", f"agent '{name}' is called, not used as a value: {name}(prompt)", node
            )
            return Value()
        if name in CALLABLE_BUILTINS:
            if not callable_ok:
                self.ctx.error("misuse", f"'{name}' is a built-in; call it: {name}(...)", node)
            return Value(CALLABLE)
        self._unknown_name(node)
        return Value()

    def _unknown_name(self, node: ast.Name) -> None:
        later = self.ctx.assigned_at.get(node.id)
        if later is not None:
            self.ctx.error(
                "unknown-name",
                f"'{node.id}' is used before it has a value (it is assigned on line {later})",
                node,
            )
            return
        known = self.ctx.known_names()
        close = self.ctx.name_index.suggest(
            node.id, lambda n: n in known or self.scope.lookup(n) is not None
        )
        hint = f"; did you mean '{close}'?" if close else ""
        self.ctx.error("unknown-name", f"unknown name '{node.id}'{hint}", node)

    def number_(self, node: ast.Number) -> Value:
        return number(node.value, True)

    def string(self, node: ast.Str) -> Value:
        return Value(STRING, sources_of(*(self.infer(v) for v in node.values)))

    def const(self, node: ast.Const) -> Value:
        return Value(NONE if node.value is None else BOOL)

    def list_(self, node: ast.ListExpr) -> Value:
        items = [self.infer(i) for i in node.items]
        item = items[0] if items else Value()
        for other in items[1:]:
            item = merge(item, other)
        return Value(LIST, sources_of(*items), item=item, length=len(items))

    def attribute(self, node: ast.Attribute) -> Value:
        base = self.infer(node.value)
        attr = node.attr
        if base.type == SNAPSHOT:
            return self._snapshot_field(node, attr)
        if base.type == OUTPUT:
            return self._output_field(node, base, attr)
        if base.type in (LIST, OUTCOMES):
            self.ctx.error(
                "misuse",
                f"{base.describe()} has no '.{attr}'; take one item first, e.g. items[0].{attr}",
                node,
            )
        elif base.type in (NUMBER, BOOL, NONE, STRING, AGENT, CALLABLE):
            self.ctx.error("misuse", f"{base.describe()} has no attribute '{attr}'", node)
        return Value(UNKNOWN, base.sources)

    def _snapshot_field(self, node: ast.Attribute, attr: str) -> Value:
        if attr not in SNAPSHOT_FIELDS:
            self.ctx.error(
                "misuse",
                f"a budget snapshot has no '{attr}' (it has "
                f"{', '.join(SNAPSHOT_FIELDS)}){did_you_mean(attr, SNAPSHOT_FIELDS)}",
                node,
            )
            return number()
        return number(self.ctx.budget.get(SNAPSHOT_FIELDS[attr]))

    def _output_field(self, node: ast.Attribute, base: Value, attr: str) -> Value:
        if attr not in OUTPUT_FIELDS:
            self.ctx.error(
                "misuse",
                f"an agent's output has no '{attr}' (it has "
                f"{', '.join(OUTPUT_FIELDS)}){did_you_mean(attr, OUTPUT_FIELDS)}",
                node,
            )
            return Value()
        sources = base.sources if attr in OUTPUT_CONTENT else frozenset()
        return Value(OUTPUT_FIELDS[attr], sources)

    def index(self, node: ast.Index) -> Value:
        base, key = self.infer(node.value), self.infer(node.index)
        if key.type not in (NUMBER, STRING, UNKNOWN):
            self.ctx.error(
                "misuse", f"an index is a number or a key, not {key.describe()}", node.index
            )
        if base.type in (LIST, OUTCOMES):
            return base.element()
        if base.type == STRING:
            return Value(STRING, base.sources)
        if base.type in (NUMBER, BOOL, NONE, OUTPUT, SNAPSHOT, AGENT, CALLABLE):
            hint = "; use .text or .value" if base.type == OUTPUT else ""
            self.ctx.error("misuse", f"{base.describe()} cannot be indexed{hint}", node)
        return Value(UNKNOWN, base.sources)

    def unary(self, node: ast.Unary) -> Value:
        value = self.infer(node.operand)
        if node.op == "not":
            return Value(BOOL)
        if value.type not in (NUMBER, UNKNOWN):
            self.ctx.error("misuse", f"'-' needs a number; this is {value.describe()}", node)
        return number(
            -value.bound if value.exact and value.bound is not None else None, value.exact
        )

    def binary(self, node: ast.Binary) -> Value:
        left, right = self.infer(node.left), self.infer(node.right)
        if node.op in ("and", "or"):
            same = left.type if left.type == right.type else UNKNOWN
            return Value(same, left.sources | right.sources)
        if node.op in _ARITHMETIC:
            return self._arithmetic(node, left, right)
        if node.op in _ORDERING:
            for side, value in ((node.left, left), (node.right, right)):
                if value.type in (OUTPUT, SNAPSHOT, LIST, OUTCOMES, NONE):
                    self.ctx.error(
                        "misuse",
                        f"'{node.op}' compares numbers or text; this is {value.describe()}",
                        side,
                    )
        return Value(BOOL)

    def _arithmetic(self, node: ast.Binary, left: Value, right: Value) -> Value:
        for side, value in ((node.left, left), (node.right, right)):
            if value.type in _NOT_ARITHMETIC:
                hint = " (use .text for its text)" if value.type == OUTPUT else ""
                self.ctx.error(
                    "misuse",
                    f"'{node.op}' needs numbers or text; this is {value.describe()}{hint}",
                    side,
                )
                return Value()
        if node.op == "+" and STRING in (left.type, right.type):
            if NUMBER in (left.type, right.type):
                self.ctx.error(
                    "misuse",
                    'cannot add text and a number; write a template instead: "{a} {b}"',
                    node,
                )
            return Value(STRING, left.sources | right.sources)
        if node.op == "+" and left.type == LIST:
            return Value(LIST, left.sources | right.sources, item=left.item)
        return _arithmetic_bound(node.op, left, right)

    def call(self, node: ast.Call) -> Value:
        return CallChecker.call(self, node)

    def parallel(self, node: ast.Parallel) -> Value:
        n = self._branch_count(node)
        self.keywords(node, PARALLEL_KEYWORDS, "parallel()")
        if len(node.body.params) > 1:
            self.ctx.error(
                "misuse",
                "a parallel body takes at most one name, the branch index: |i| { ... }",
                node.body,
            )
        self.spends.append(Spend())
        index = number(None if n.bound is None else max(n.bound - 1, 0))
        body = self.lambda_value(node.body, [index] * len(node.body.params))
        inner = self.spends.pop()
        self.budget_feasible(node, n, inner, f"parallel({n.bound or 0:g})")
        self.spends[-1].absorb(inner, n.bound)
        return Value(OUTCOMES, body.sources, item=body)

    def _branch_count(self, node: ast.Parallel) -> Value:
        if len(node.args) != 1:
            self.ctx.error(
                "misuse", "parallel(n) takes the number of branches: parallel(3) { ... }", node
            )
            for arg in node.args:
                self.infer(arg)
            return number()
        n = self.infer(node.args[0])
        if n.type not in (NUMBER, UNKNOWN):
            self.ctx.error(
                "misuse",
                f"parallel(n) takes a number of branches; this is {n.describe()}",
                node.args[0],
            )
            return number()
        if n.exact and n.bound is not None and (n.bound < 0 or not float(n.bound).is_integer()):
            self.ctx.error(
                "misuse", "parallel(n) needs a whole number of branches, 0 or more", node.args[0]
            )
        return n

    def budget_call(self, node: ast.BudgetCall) -> Value:
        for extra in [*node.args, *node.keywords]:
            self.ctx.error("misuse", "budget() takes nothing between its parentheses", extra)
        return Value(SNAPSHOT)

    def ask(self, node: ast.Ask) -> Value:
        agent = self._session_of(node, "ask")
        prompt = self.infer(node.prompt)
        if node.output is not None:
            self.model_ref(node.output, "ask ... as")
        if agent is None:
            return Value()
        self.handoff(prompt, agent, node.prompt, f"ask in the {agent} session")
        self.spends[-1].add_call(agent, self.ctx.agents[agent].allowance)
        return Value(MODEL if node.output is not None else OUTPUT, frozenset({agent}))

    def send(self, node: ast.Send) -> Value:
        agent = self._session_of(node, "send")
        value = self.sequence(node.value, "send each") if node.each else self.infer(node.value)
        self.raw_outcomes(value, node.value)
        if agent is None:
            return Value()
        shown = value.element() if node.each else value
        self.handoff(shown, agent, node.value, f"send in the {agent} session")
        self.spends[-1].add_call(agent, self.ctx.agents[agent].allowance)
        return Value(OUTPUT, frozenset({agent}))

    def _session_of(self, node: Any, word: str) -> str | None:
        if not self.scope.sessions:
            self.ctx.error(
                "misuse",
                f"'{word}' talks to a session, so it goes inside `session agent {{ ... }}`",
                node,
            )
            return None
        return self.scope.sessions[-1]


def _arithmetic_bound(op: str, left: Value, right: Value) -> Value:
    a, b = left.bound, right.bound
    exact = left.exact and right.exact
    if a is None or b is None or not (right.exact or op == "+"):
        return number()
    if op == "+":
        return number(a + b, exact)
    if op == "-":
        return number(a - b, exact)
    if op == "*":
        return number(a * b, exact) if b >= 0 and (exact or a >= 0) else number()
    if b <= 0:
        return number()
    if op == "/":
        return number(a / b, exact)
    if op == "//":
        return number(a // b, exact)
    return number(a % b if exact else b, exact)


_DISPATCH: dict[type, Callable[[ExprChecker, Any], Value]] = {
    ast.Number: ExprChecker.number_,
    ast.Str: ExprChecker.string,
    ast.Const: ExprChecker.const,
    ast.ListExpr: ExprChecker.list_,
    ast.Attribute: ExprChecker.attribute,
    ast.Index: ExprChecker.index,
    ast.Unary: ExprChecker.unary,
    ast.Binary: ExprChecker.binary,
    ast.Call: ExprChecker.call,
    ast.Parallel: ExprChecker.parallel,
    ast.BudgetCall: ExprChecker.budget_call,
    ast.Ask: ExprChecker.ask,
    ast.Send: ExprChecker.send,
}
