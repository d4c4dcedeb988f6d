"""Evaluating expressions at run time, by calling the real operators in swarmflow.operators.

Each call maps onto the Python API one to one (`coder(x)` is `await agent("coder", x)`,
`parallel(n) |i| {...}` is `await parallel(factory, n=n)`, ...), so a DSL flow and its Python
twin record the same events.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from swarmflow.core.outcomes import Ok
from swarmflow.dsl import ast
from swarmflow.dsl.callables import value_of
from swarmflow.dsl.diagnostics import Diagnostic, DslError
from swarmflow.dsl.ir import Program, StepGraph
from swarmflow.operators import agent, budget, compact, human, parallel, pipeline, team
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
        name = node.func.id
        if name in self.rt.agents:
            prompt = await self.evaluate(node.args[0]) if node.args else ""
            return await agent(name, prompt, **await self.options(node, imports=("output",)))
        if name in self.rt.imports:
            return await self.python_call(node)
        return await _CALLS.get(name, Evaluator.builtin_call)(self, node)

    async def options(
        self, node: ast.Call, *, imports: tuple[str, ...] = (), agents: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """A call's `name: value` options; those in `imports` name an import (a model, a
        predicate), those in `agents` name agents, bare: one agent or a list of them."""
        found: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.name in imports and isinstance(kw.value, ast.Name):
                found[kw.name] = self.rt.imports[kw.value.id]
            elif kw.name in agents:
                found[kw.name] = _agent_names(kw.value)
            else:
                found[kw.name] = await self.evaluate(kw.value)
        return found

    async def python_call(self, node: ast.Call) -> Any:
        fn = self.rt.imports[node.func.id]
        args = [await self.argument(a) for a in node.args]
        args += [self.lambda_callable(lam) for lam in node.lambdas]
        kwargs = {kw.name: await self.argument(kw.value) for kw in node.keywords}
        return await _awaited(fn(*args, **kwargs))

    async def argument(self, node: Any) -> Any:
        """An argument's value; an agent named bare is passed as an async callable."""
        if isinstance(node, ast.Name) and node.id not in self.values:
            return self.callable_of(node)
        return await self.evaluate(node)

    async def compact_call(self, node: ast.Call) -> Any:
        outcomes = await self.evaluate(node.args[0])
        return compact(outcomes, **await self.options(node, imports=("keep",)))

    async def human_call(self, node: ast.Call) -> Any:
        args = [await self.evaluate(a) for a in node.args]
        return await human(*args, **await self.options(node, imports=("output",)))

    async def team_call(self, node: ast.Call) -> Any:
        """`team(task, lead: agent, roles: [agents], ...)`: agents are named bare, as everywhere."""
        task = await self.evaluate(node.args[0])
        return await team(task, **await self.options(node, agents=("lead", "roles")))

    async def budget_call(self, node: ast.Call) -> Any:
        return await budget()

    async def pipeline_call(self, node: ast.Call) -> list[Any]:
        """`pipeline(items, stages...) |x| {...}`: collected into a list of outcomes."""
        first = node.args[0]
        if ast.is_call(first, "parallel"):  # stream branches into the first stage as they finish
            source = await self.parallel_call(first, stream=True)
        else:
            source = await self.evaluate(first)
        stages = [self.stage(a) for a in node.args[1:]]
        stages += [self.lambda_callable(lam) for lam in node.lambdas]
        stream = pipeline(source, *stages, **await self.options(node))
        try:
            return await stream.collect()
        finally:
            await stream.aclose()

    def stage(self, node: Any) -> Callable[[Any], Awaitable[Any]]:
        """A pipeline stage: an agent or an imported callable, awaited when it is async."""
        if node.id in self.rt.agents:
            return functools.partial(agent, node.id)
        fn = self.rt.imports[node.id]

        async def run(item: Any) -> Any:
            return await _awaited(fn(item))

        return run

    async def parallel_call(self, node: ast.Call, *, stream: bool = False) -> Any:
        """`parallel(n) |i| { ... }`: n branches of the body, or the streaming form."""
        n = await self.evaluate(node.args[0])
        if isinstance(n, bool) or not isinstance(n, int | float) or math.isnan(n) or n < 0:
            raise self.rt.fail(
                node.args[0], f"parallel(n) needs a number of branches, 0 or more; got {n!r}"
            )
        given = await self.options(node)
        body = node.lambdas[0]

        def factory(i: int) -> Awaitable[Any]:
            return self.run_lambda(body, [i] if body.params else [])

        if stream:
            given.pop("first", None)
            return parallel.stream(factory, n=int(n), **given)
        return await parallel(factory, n=int(n), **given)  # a fractional count rounds down

    async def builtin_call(self, node: ast.Call) -> Any:
        """A built-in function from the table, called with its arguments' values."""
        fn = value_of(node.func.id)
        assert fn is not None  # the checker passed only names in the table
        values = [await self.evaluate(a) for a in node.args]
        try:
            return fn(*values)
        except (TypeError, ValueError, OverflowError) as exc:
            raise self.rt.fail(node, f"{node.func.id}(...) failed: {exc}") from None

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


def _agent_names(node: Any) -> Any:
    """`coder` is "coder", `[coder, reviewer]` is ["coder", "reviewer"] (check made sure)."""
    if isinstance(node, ast.ListExpr):
        return [item.id for item in node.items if isinstance(item, ast.Name)]
    return node.id if isinstance(node, ast.Name) else None


async def _awaited(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


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
    ast.Ask: Evaluator.ask,
    ast.Send: Evaluator.send,
}
_CALLS: dict[str, Callable[[Evaluator, ast.Call], Awaitable[Any]]] = {
    "compact": Evaluator.compact_call,
    "human": Evaluator.human_call,
    "pipeline": Evaluator.pipeline_call,
    "team": Evaluator.team_call,
    "parallel": Evaluator.parallel_call,
    "budget": Evaluator.budget_call,
}
