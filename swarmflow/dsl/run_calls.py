"""Calls at run time: agents, the operators, built-ins and imported Python callables.

Each maps onto the Python API one to one (`coder(x)` is `await agent("coder", x)`,
`parallel(n) |i| {...}` is `await parallel(factory, n=n)`, ...), so a DSL flow and its Python
twin record the same events.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from swarmflow.dsl import ast
from swarmflow.dsl.callables import value_of
from swarmflow.operators import agent, compact, human, parallel, pipeline, team

if TYPE_CHECKING:
    from swarmflow.dsl.evaluate import Evaluator

Handler = Callable[["Evaluator", ast.Call], Awaitable[Any]]


async def call(ev: Evaluator, node: ast.Call) -> Any:
    """Run one call expression."""
    name = node.func.id
    if name in ev.rt.agents:
        return await agent_call(ev, node)
    if name in ev.rt.imports:
        return await python_call(ev, node)
    return await handler(name)(ev, node)


async def agent_call(ev: Evaluator, node: ast.Call) -> Any:
    prompt = await ev.evaluate(node.args[0]) if node.args else ""
    return await agent(node.func.id, prompt, **await options(ev, node, imports=("output",)))


async def options(
    ev: Evaluator, node: Any, *, imports: tuple[str, ...] = (), agents: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A call's `name: value` options; those in `imports` name an import (a model, a
    predicate), those in `agents` name agents, bare: one agent or a list of them."""
    found: dict[str, Any] = {}
    for kw in node.keywords:
        value = kw.value
        if kw.name in imports:
            found[kw.name] = model_of(ev, value)
        elif kw.name in agents:
            found[kw.name] = agent_names(value)
        else:
            found[kw.name] = await ev.evaluate(value)
    return found


def agent_names(node: Any) -> Any:
    """`coder` is "coder", `[coder, reviewer]` is ["coder", "reviewer"] (check made sure)."""
    if isinstance(node, ast.ListExpr):
        return [item.id for item in node.items if isinstance(item, ast.Name)]
    return node.id if isinstance(node, ast.Name) else None


def model_of(ev: Evaluator, node: Any) -> Any:
    return ev.rt.imports[node.id] if isinstance(node, ast.Name) else None


async def python_call(ev: Evaluator, node: ast.Call) -> Any:
    fn = ev.rt.imports[node.func.id]
    args = [await argument(ev, a) for a in node.args]
    args += [ev.lambda_callable(lam) for lam in node.lambdas]
    kwargs = {kw.name: await argument(ev, kw.value) for kw in node.keywords}
    result = fn(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


async def argument(ev: Evaluator, node: Any) -> Any:
    """An argument's value; an agent named bare is passed as an async callable."""
    if isinstance(node, ast.Name) and node.id not in ev.values:
        return ev.callable_of(node)
    return await ev.evaluate(node)


async def compact_call(ev: Evaluator, node: ast.Call) -> Any:
    outcomes = await ev.evaluate(node.args[0])
    return compact(outcomes, **await options(ev, node, imports=("keep",)))


async def human_call(ev: Evaluator, node: ast.Call) -> Any:
    args = [await ev.evaluate(a) for a in node.args]
    return await human(*args, **await options(ev, node, imports=("output",)))


async def team_call(ev: Evaluator, node: ast.Call) -> Any:
    """`team(task, lead: agent, roles: [agents], ...)`: agents are named bare, as everywhere."""
    task = await ev.evaluate(node.args[0])
    return await team(task, **await options(ev, node, agents=("lead", "roles")))


async def pipeline_call(ev: Evaluator, node: ast.Call) -> list[Any]:
    """`pipeline(items, stages...) |x| {...}`: collected into a list of outcomes."""
    first = node.args[0]
    if isinstance(first, ast.Parallel):  # stream branches into the first stage as they finish
        source = await run_parallel(ev, first, stream=True)
    else:
        source = await ev.evaluate(first)
    stages = [stage(ev, a) for a in node.args[1:]]
    stages += [ev.lambda_callable(lam) for lam in node.lambdas]
    stream = pipeline(source, *stages, **await options(ev, node))
    try:
        return await stream.collect()
    finally:
        await stream.aclose()


def stage(ev: Evaluator, node: Any) -> Callable[[Any], Awaitable[Any]]:
    """A pipeline stage: an agent or an imported callable, awaited when it is async."""
    if isinstance(node, ast.Name) and node.id in ev.rt.agents:
        return functools.partial(agent, node.id)
    fn = ev.rt.imports[node.id]

    async def run(item: Any) -> Any:
        result = fn(item)
        return await result if inspect.isawaitable(result) else result

    return run


async def run_parallel(ev: Evaluator, node: ast.Parallel, *, stream: bool) -> Any:
    """`parallel(n) |i| { ... }`: n branches of the body, or the streaming form."""
    n = await _branch_count(ev, node)
    given = await options(ev, node)
    body = node.body

    def factory(i: int) -> Awaitable[Any]:
        return ev.run_lambda(body, [i] if body.params else [])

    if stream:
        given.pop("first", None)
        return parallel.stream(factory, n=n, **given)
    return await parallel(factory, n=n, **given)


async def _branch_count(ev: Evaluator, node: ast.Parallel) -> int:
    value = await ev.evaluate(node.args[0])
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or value < 0
    ):
        raise ev.rt.fail(
            node.args[0], f"parallel(n) needs a number of branches, 0 or more; got {value!r}"
        )
    return int(value)  # a fractional count rounds down


async def builtin_call(ev: Evaluator, node: ast.Call) -> Any:
    """A built-in function from the table, called with its arguments' values."""
    fn = value_of(node.func.id)
    assert fn is not None  # the checker passed only names in the table
    values = [await ev.evaluate(a) for a in node.args]
    try:
        return fn(*values)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ev.rt.fail(node, f"{node.func.id}(...) failed: {exc}") from None


_HANDLERS: dict[str, Handler] = {
    "compact": compact_call,
    "human": human_call,
    "pipeline": pipeline_call,
    "team": team_call,
}


def handler(name: str) -> Handler:
    """How a call to a built-in name runs."""
    return _HANDLERS.get(name, builtin_call)
