"""Evaluating expressions at run time, by calling the real operators in swarmflow.operators."""

from __future__ import annotations

import functools
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from swarmflow.core.outcomes import Ok
from swarmflow.dsl import ast, run_calls
from swarmflow.dsl.callables import value_of
from swarmflow.dsl.diagnostics import Diagnostic, DslError
from swarmflow.dsl.ir import Program, StepGraph
from swarmflow.operators import agent, budget
from swarmflow.runtime.prompts import render_prompt


class _Unset:
    """A name with no value on this path (assigned in a branch or a loop that did not run)."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()
_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

GraphRunner = Callable[["Runtime", StepGraph, dict[str, Any]], Awaitable[Any]]


@dataclass
class Runtime:
    """What every step of one run shares: the program, its imports, and the graph runner."""

    program: Program
    imports: dict[str, Any]
    run_graph: GraphRunner

    @functools.cached_property
    def agents(self) -> frozenset[str]:
        return frozenset(a.name for a in self.program.agents)

    def fail(self, node: Any, message: str) -> DslError:
        """A located run-time error in the flow's own expressions."""
        diag = Diagnostic.at(node, "runtime", message, self.program.filename)
        return DslError([diag], self.program.source)


class Evaluator:
    """`await evaluate(node)`: the value of one expression in one step's scope."""

    def __init__(self, rt: Runtime, values: dict[str, Any]) -> None:
        self.rt = rt
        self.values = values

    async def evaluate(self, node: Any) -> Any:
        method = _DISPATCH[type(node)]
        return await method(self, node)

    async def name(self, node: ast.Name) -> Any:
        value = self.values.get(node.id, _MISSING)
        if value is UNSET:
            raise self.rt.fail(
                node,
                f"'{node.id}' has no value here: it is assigned only in a branch "
                "of an if or match, or a loop, that did not run",
            )
        if value is not _MISSING:
            return value
        return self.callable_of(node)

    def callable_of(self, node: ast.Name) -> Any:
        """An agent, import or built-in named as a value (a pipeline stage, say)."""
        name = node.id
        if name in self.rt.agents:
            return functools.partial(agent, name)
        if name in self.rt.imports:
            return self.rt.imports[name]
        value = value_of(name)
        if value is not None:
            return value
        raise self.rt.fail(node, f"'{name}' has no value here")

    async def number(self, node: ast.Number) -> Any:
        return int(node.value) if node.is_integer else node.value

    async def string(self, node: ast.Str) -> str:
        if not node.values:
            return node.texts[0]
        parts = [node.texts[0]]
        for value, text in zip(node.values, node.texts[1:], strict=True):
            parts.append(_render(await self.evaluate(value)))
            parts.append(text)
        return "".join(parts)

    async def const(self, node: ast.Const) -> Any:
        return node.value

    async def list_(self, node: ast.ListExpr) -> list[Any]:
        return [await self.evaluate(item) for item in node.items]

    async def attribute(self, node: ast.Attribute) -> Any:
        base = await self.evaluate(node.value)
        if isinstance(base, Mapping) and node.attr in base:
            return base[node.attr]
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.rt.fail(node, f"{_describe(base)} has no attribute '{node.attr}'") from None

    async def index(self, node: ast.Index) -> Any:
        base, key = await self.evaluate(node.value), await self.evaluate(node.index)
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        try:
            return base[key]
        except (IndexError, KeyError, TypeError) as exc:
            raise self.rt.fail(
                node, f"cannot take [{key!r}] of {_describe(base)}: {type(exc).__name__}: {exc}"
            ) from None

    async def unary(self, node: ast.Unary) -> Any:
        value = await self.evaluate(node.operand)
        if node.op == "not":
            return not value
        try:
            return -value
        except TypeError:
            raise self.rt.fail(node, f"cannot negate {_describe(value)}") from None

    async def binary(self, node: ast.Binary) -> Any:
        left = await self.evaluate(node.left)
        if node.op == "and":
            return await self.evaluate(node.right) if left else left
        if node.op == "or":
            return left if left else await self.evaluate(node.right)
        right = await self.evaluate(node.right)
        try:
            return _ARITHMETIC[node.op](left, right)
        except (TypeError, ZeroDivisionError, ValueError) as exc:
            raise self.rt.fail(
                node, f"cannot compute {_describe(left)} {node.op} {_describe(right)}: {exc}"
            ) from None

    async def call(self, node: ast.Call) -> Any:
        return await run_calls.call(self, node)

    async def parallel_(self, node: ast.Parallel) -> Any:
        return await run_calls.run_parallel(self, node, stream=False)

    async def budget_(self, node: ast.BudgetCall) -> Any:
        return await budget()

    async def ask(self, node: ast.Ask) -> Any:
        handle = self.session_of(node)
        prompt = await self.evaluate(node.prompt)
        output = self.rt.imports[node.output.id] if node.output is not None else None
        return await handle.ask(prompt, output=output)

    async def send(self, node: ast.Send) -> Any:
        handle = self.session_of(node)
        value = await self.evaluate(node.value)
        if not node.each:
            return await handle.send(value)
        answer = None
        for item in _iterate(self.rt, node.value, value, "send each"):
            answer = await handle.send(item.value if isinstance(item, Ok) else item)
        return answer

    async def loop_rounds(self, loop: ast.Loop) -> list[Any]:
        """The items of a `for`, or `range(n)` for `repeat n`."""
        value = await self.evaluate(loop.over)
        if loop.var is not None:
            return _iterate(self.rt, loop.over, value, "for ... in")
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise self.rt.fail(
                loop.over, f"repeat needs a number of rounds, 0 or more; got {value!r}"
            )
        return list(range(int(value)))

    def session_of(self, node: Any) -> Any:
        handle_name = self.rt.program.sessions.get((node.line, node.column))
        handle = self.values.get(handle_name, None) if handle_name else None
        if handle is None:
            raise self.rt.fail(node, "this turn has no open session")
        return handle

    async def run_lambda(self, lam: ast.Lambda, args: list[Any]) -> Any:
        """Run a `|x| { ... }` body with `args` bound to its names; its value."""
        graph = self.rt.program.lambdas[(lam.line, lam.column)]
        env = dict(self.values)
        env.update(zip((p.id for p in lam.params), args, strict=False))
        return await self.rt.run_graph(self.rt, graph, env)

    def lambda_callable(self, lam: ast.Lambda) -> Callable[..., Awaitable[Any]]:
        async def body(*args: Any) -> Any:
            return await self.run_lambda(lam, list(args))

        return body


def _iterate(rt: Runtime, node: Any, value: Any, what: str) -> list[Any]:
    if isinstance(value, str | bytes | Mapping):
        raise rt.fail(node, f"{what} needs a list; this is {_describe(value)}")
    try:
        return list(value)
    except TypeError:
        raise rt.fail(node, f"{what} needs a list; this is {_describe(value)}") from None


def _render(value: Any) -> str:
    return value if isinstance(value, str) else render_prompt(value)


def _describe(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:30]!r}"
    return f"a {type(value).__name__}"


_MISSING: Any = object()
_DISPATCH: dict[type, Callable[[Evaluator, Any], Awaitable[Any]]] = {
    ast.Name: Evaluator.name,
    ast.Number: Evaluator.number,
    ast.Str: Evaluator.string,
    ast.Const: Evaluator.const,
    ast.ListExpr: Evaluator.list_,
    ast.Attribute: Evaluator.attribute,
    ast.Index: Evaluator.index,
    ast.Unary: Evaluator.unary,
    ast.Binary: Evaluator.binary,
    ast.Call: Evaluator.call,
    ast.Parallel: Evaluator.parallel_,
    ast.BudgetCall: Evaluator.budget_,
    ast.Ask: Evaluator.ask,
    ast.Send: Evaluator.send,
}
