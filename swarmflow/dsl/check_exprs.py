"""Checks of expressions: names, attributes, operators, templates, `parallel`, `ask`/`send`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarmflow.dsl import ast
from swarmflow.dsl.check_calls import CallChecker
from swarmflow.dsl.check_context import CALLABLE_BUILTINS, OPERATORS
from swarmflow.dsl.diagnostics import did_you_mean, suggest
from swarmflow.dsl.values import (
    OUTPUT_CONTENT,
    OUTPUT_FIELDS,
    SNAPSHOT_FIELDS,
    T,
    Value,
    merge,
    number,
    sources_of,
)

_PARAM_TYPES = {"str": T.STRING, "int": T.NUMBER, "float": T.NUMBER, "bool": T.BOOL, "list": T.LIST}
_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%"})
_ORDERING = frozenset({"<", "<=", ">", ">="})
_NOT_ARITHMETIC = frozenset({T.OUTPUT, T.SNAPSHOT, T.OUTCOMES, T.NONE, T.BOOL, T.MODEL})


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
            return Value(_PARAM_TYPES.get(param.type.name, T.UNKNOWN))
        return self._global(node, callable_ok)

    def _global(self, node: ast.Name, callable_ok: bool) -> Value:
        name = node.id
        if name in self.ctx.imports:
            return Value(T.CALLABLE)
        if name in self.ctx.agents:
            if callable_ok:
                self.ctx.used_agents.add(name)
                return Value(T.AGENT)
            self.ctx.error(
                "misuse", f"agent '{name}' is called, not used as a value: {name}(prompt)", node
            )
            return Value()
        if name in CALLABLE_BUILTINS:
            if not callable_ok:
                self.ctx.error("misuse", f"'{name}' is a built-in; call it: {name}(...)", node)
            return Value(T.CALLABLE)
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
        return Value(T.STRING, sources_of(*(self.infer(v) for v in node.values)))

    def const(self, node: ast.Const) -> Value:
        return Value(T.NONE if node.value is None else T.BOOL)

    def list_(self, node: ast.ListExpr) -> Value:
        items = [self.infer(i) for i in node.items]
        item = items[0] if items else Value()
        for other in items[1:]:
            item = merge(item, other)
        return Value(T.LIST, sources_of(*items), item=item, length=len(items))

    def attribute(self, node: ast.Attribute) -> Value:
        base = self.infer(node.value)
        attr = node.attr
        if base.type == T.SNAPSHOT:
            return self._snapshot_field(node, attr)
        if base.type == T.OUTPUT:
            return self._output_field(node, base, attr)
        if base.type in (T.LIST, T.OUTCOMES):
            self.ctx.error(
                "misuse",
                f"{base.describe()} has no '.{attr}'; take one item first, e.g. items[0].{attr}",
                node,
            )
        elif base.type in (T.NUMBER, T.BOOL, T.NONE, T.STRING, T.AGENT, T.CALLABLE):
            self.ctx.error("misuse", f"{base.describe()} has no attribute '{attr}'", node)
        return Value(T.UNKNOWN, base.sources)

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
        if key.type not in (T.NUMBER, T.STRING, T.UNKNOWN):
            self.ctx.error(
                "misuse", f"an index is a number or a key, not {key.describe()}", node.index
            )
        if base.type in (T.LIST, T.OUTCOMES):
            return base.element()
        if base.type == T.STRING:
            return Value(T.STRING, base.sources)
        if base.type in (T.NUMBER, T.BOOL, T.NONE, T.OUTPUT, T.SNAPSHOT, T.AGENT, T.CALLABLE):
            hint = "; use .text or .value" if base.type == T.OUTPUT else ""
            self.ctx.error("misuse", f"{base.describe()} cannot be indexed{hint}", node)
        return Value(T.UNKNOWN, base.sources)

    def unary(self, node: ast.Unary) -> Value:
        value = self.infer(node.operand)
        if node.op == "not":
            return Value(T.BOOL)
        if value.type not in (T.NUMBER, T.UNKNOWN):
            self.ctx.error("misuse", f"'-' needs a number; this is {value.describe()}", node)
        return number(
            -value.bound if value.exact and value.bound is not None else None, value.exact
        )

    def binary(self, node: ast.Binary) -> Value:
        left, right = self.infer(node.left), self.infer(node.right)
        if node.op in ("and", "or"):
            same = left.type if left.type == right.type else T.UNKNOWN
            return Value(same, left.sources | right.sources)
        if node.op in _ARITHMETIC:
            return self._arithmetic(node, left, right)
        if node.op in _ORDERING:
            for side, value in ((node.left, left), (node.right, right)):
                if value.type in (T.OUTPUT, T.SNAPSHOT, T.LIST, T.OUTCOMES, T.NONE):
                    self.ctx.error(
                        "misuse",
                        f"'{node.op}' compares numbers or text; this is {value.describe()}",
                        side,
                    )
        return Value(T.BOOL)

    def _arithmetic(self, node: ast.Binary, left: Value, right: Value) -> Value:
        for side, value in ((node.left, left), (node.right, right)):
            if value.type in _NOT_ARITHMETIC:
                hint = " (use .text for its text)" if value.type == T.OUTPUT else ""
                self.ctx.error(
                    "misuse",
                    f"'{node.op}' needs numbers or text; this is {value.describe()}{hint}",
                    side,
                )
                return Value()
        if node.op == "+" and T.STRING in (left.type, right.type):
            if T.NUMBER in (left.type, right.type):
                self.ctx.error(
                    "misuse",
                    'cannot add text and a number; write a template instead: "{a} {b}"',
                    node,
                )
            return Value(T.STRING, left.sources | right.sources)
        if node.op == "+" and left.type == T.LIST:
            return Value(T.LIST, left.sources | right.sources, item=left.item)
        return _arithmetic_bound(node.op, left, right)

    def ask(self, node: ast.Ask) -> Value:
        agent = self._session_of(node, "ask")
        prompt = self.infer(node.prompt)
        if node.output is not None:
            self.model_ref(node.output, "ask ... as")
        if agent is None:
            return Value()
        self.handoff(prompt, agent, node.prompt, f"ask in the {agent} session")
        self.spends[-1].add_call(agent, self.ctx.agents[agent].allowance)
        return Value(T.MODEL if node.output is not None else T.OUTPUT, frozenset({agent}))

    def send(self, node: ast.Send) -> Value:
        agent = self._session_of(node, "send")
        value = self.sequence(node.value, "send each") if node.each else self.infer(node.value)
        self.raw_outcomes(value, node.value)
        if agent is None:
            return Value()
        shown = value.element() if node.each else value
        self.handoff(shown, agent, node.value, f"send in the {agent} session")
        self.spends[-1].add_call(agent, self.ctx.agents[agent].allowance)
        return Value(T.OUTPUT, frozenset({agent}))

    def call(self, node: ast.Call) -> Value:
        name = node.func.id
        if self.scope.lookup(name) is not None or name in self.ctx.params:
            self.ctx.error("misuse", f"'{name}' is a value, not something to call", node.func)
            return Value()
        if name in self.ctx.agents:
            return self.agent_call(node, name)
        if name in self.ctx.imports:
            return self.python_call(node)
        handler = _CALLS.get(name)
        if handler is not None:
            return handler(self, node)
        return self.unknown_call(node)

    def unknown_call(self, node: ast.Call) -> Value:
        name = node.func.id
        candidates = {*self.ctx.agents, *self.ctx.imports, *_CALLS, *OPERATORS}
        close = suggest(name, candidates)
        if close in OPERATORS:
            self.ctx.error(
                "unknown-operator", f"unknown operator '{name}'; did you mean '{close}'?", node.func
            )
        elif close in self.ctx.agents:
            self.ctx.error(
                "unknown-agent", f"unknown agent '{name}'; did you mean '{close}'?", node.func
            )
        else:
            hint = f"; did you mean '{close}'?" if close else ""
            self.ctx.error(
                "unknown-name",
                f"unknown function '{name}'{hint} (call an agent, "
                "an operator, a built-in, or a Python callable imported with `use`)",
                node.func,
            )
        self._infer_all(node)
        return Value()

    def min_max(self, node: ast.Call) -> Value:
        name = node.func.id
        self._plain_builtin(node)
        if not node.args:
            self.ctx.error("misuse", f"{name}(...) needs at least one value", node.func)
            return number()
        values = [self._numeric(a, name) for a in node.args]
        bounds = [v.bound for v in values if v.bound is not None]
        exact = all(v.exact for v in values) and len(bounds) == len(values)
        if name == "min":
            return number(min(bounds) if bounds else None, exact)
        return number(max(bounds) if len(bounds) == len(values) else None, exact)

    def clamp(self, node: ast.Call) -> Value:
        self._plain_builtin(node)
        if len(node.args) != 3:
            self.ctx.error("misuse", "clamp(value, low, high) takes three numbers", node.func)
            return number()
        x, low, high = (self._numeric(a, "clamp") for a in node.args)
        if (
            low.exact
            and high.exact
            and low.bound is not None
            and high.bound is not None
            and low.bound > high.bound
        ):
            self.ctx.error("misuse", "clamp's low is above its high", node.args[1])
        if x.exact and low.exact and high.exact and None not in (x.bound, low.bound, high.bound):
            return number(min(max(x.bound, low.bound), high.bound), True)  # type: ignore[type-var]
        return number(high.bound)

    def _numeric(self, node: Any, where: str) -> Value:
        value = self.infer(node)
        if value.type not in (T.NUMBER, T.UNKNOWN, T.LIST, T.OUTCOMES):
            self.ctx.error(
                "misuse", f"{where}(...) works on numbers; this is {value.describe()}", node
            )
        return value

    def _plain_builtin(self, node: ast.Call) -> None:
        self.no_lambdas(node, f"{node.func.id}(...) takes no |x| {{ ... }} body")
        for kw in node.keywords:
            self.ctx.error("misuse", f"{node.func.id}(...) takes no options", kw)

    def one_arg(self, node: ast.Call) -> Value:
        name = node.func.id
        self._plain_builtin(node)
        if len(node.args) != 1:
            self.ctx.error("misuse", f"{name}(...) takes one value", node.func)
            return Value(T.STRING if name == "str" else T.NUMBER)
        value = self.infer(node.args[0])
        if name == "str":
            return Value(T.STRING, value.sources)
        if name == "len":
            if value.type in (T.NUMBER, "bool", "none", T.OUTPUT, "snapshot"):
                self.ctx.error(
                    "misuse",
                    f"len(...) needs a list or text; this is {value.describe()}",
                    node.args[0],
                )
            return number()
        return number(value.bound, value.exact)

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
    ast.Ask: ExprChecker.ask,
    ast.Send: ExprChecker.send,
}


_CALLS: dict[str, Callable[[ExprChecker, ast.Call], Value]] = {
    "compact": ExprChecker.compact_call,
    "pipeline": ExprChecker.pipeline_call,
    "human": ExprChecker.human_call,
    "team": ExprChecker.team_call,
    "parallel": ExprChecker.parallel_call,
    "budget": ExprChecker.budget_call,
    "min": ExprChecker.min_max,
    "max": ExprChecker.min_max,
    "clamp": ExprChecker.clamp,
    **{name: ExprChecker.one_arg for name in ("len", "str", "int", "float", "round")},
}
