"""Running a plan: each step starts as soon as the steps it waits for are done.

The order comes from the standard library's `graphlib.TopologicalSorter`. A chain of steps runs
in the caller's task, exactly as the same awaits written in Python would; once two steps are
ready at once, they run concurrently in an anyio task group (started in source order; each task
carries on with a step it made ready). A failing step cancels the others, and its exception
(not an exception group) is what the flow raises, so `RunPaused`, `TopologyError` and the rest
reach the runner as themselves.

A loop's rounds are counted, never built as a list. Before each round the loop lets the
deadline in force stop it (a round that only computes has no checkpoint of its own), and a
loop whose rounds call models stops with `BudgetExhausted` once the budget has nothing left.

Expressions call the real operators one to one (`coder(x)` is `await agent("coder", x)`,
`parallel(n) |i| {...}` is `await parallel(factory, n=n)`, ...), so a `.swarm` flow and its
Python twin record the same events. The checker has vouched for names, arities and kinds of
the flow's own values; the errors left here are those only a run's values can cause (a model's
answer of the wrong kind, an input out of range), each located at its expression.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import operator
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from graphlib import TopologicalSorter
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from swarmflow.core.errors import ConfigError
from swarmflow.core.outcomes import Ok
from swarmflow.dsl.check.callables import value_of
from swarmflow.dsl.compile.plan import (
    OPERATORS,
    SESSION,
    VALUE,
    Block,
    Program,
    Step,
    literal_value,
)
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, DslError
from swarmflow.operators import agent, agent_session, budget, parallel, pipeline
from swarmflow.operators.budget import nothing_left
from swarmflow.operators.parallel import check_count
from swarmflow.runtime.context import current_scope
from swarmflow.sessions.prompts import render_prompt

UNSET: object = object()
"""The value of a name with none on this path (assigned in a branch or loop that did not run)."""
Ended = dict[str, Any]
"""What a step or block that did not `return` hands on: the last value of each name."""
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


@dataclass(frozen=True, slots=True)
class Returned:
    """A `return` ran: the block (and any block waiting on it) ends with this value."""

    value: object


async def execute(program: Program, imports: dict[str, Any], inputs: dict[str, Any]) -> Any:
    """Run the flow's steps with `inputs`; the value of its `return` (or None)."""
    agents = frozenset(a.name for a in program.agents)
    ended = await _BlockRun(Evaluator(program, imports, agents, inputs), program.steps).run()
    return ended.value if isinstance(ended, Returned) else ended[VALUE]


@dataclass
class _BlockRun:
    """One block while it runs, with the names `ev` knows from outside it."""

    ev: Evaluator
    block: Block
    results: dict[str, Ended] = field(default_factory=dict)
    returned: Returned | None = None
    error: Exception | None = None

    def __post_init__(self) -> None:
        self.order = {sid: n for n, sid in enumerate(self.block.steps)}
        self.sorter = TopologicalSorter({s.id: s.waits for s in self.block.steps.values()})
        self.sorter.prepare()

    async def run(self) -> Returned | Ended:
        """`Returned`, or the last value of each name the block assigns."""
        ready = self._ready()
        while len(ready) == 1:  # a chain runs in this task, with no checkpoint between steps
            ready = await self._run_one(self.block.steps[ready[0]])
        if ready:
            async with anyio.create_task_group() as tg:
                await self._chain(ready, tg)
        if self.error is not None:
            raise self.error
        if self.returned is not None:
            return self.returned
        finals = {n: self.results[w][n] for n, w in self.block.finals.items()}
        last = self.results.get(self.block.value_step or "", {})
        return {**finals, VALUE: last.get(VALUE)}

    async def _chain(self, ready: list[str], tg: TaskGroup) -> None:
        """Start all ready steps but the first, run it, and carry on with what it made ready."""
        while ready:
            for other in ready[1:]:
                tg.start_soon(self._chain, [other], tg)
            try:
                ready = await self._run_one(self.block.steps[ready[0]])
            except Exception as exc:  # the first failure ends the block; run() re-raises it
                self.error = self.error or exc
                tg.cancel_scope.cancel()
                return

    async def _run_one(self, step: Step) -> list[str]:
        """Run one step; the steps that became ready because of it, in source order."""
        scope = {
            n: (self.results[w] if w else self.ev.values).get(n, UNSET)
            for n, w in step.reads.items()
        }
        ev = self.ev.within(scope)
        out = await _STEPS.get(type(step.stmt), _simple)(step, ev)
        if isinstance(out, Returned):
            self.returned = out
            return []  # every later step waits on this one, so none of them starts
        self.results[step.id] = out
        self.sorter.done(step.id)
        return self._ready()

    def _ready(self) -> list[str]:
        return sorted(self.sorter.get_ready(), key=self.order.__getitem__)


async def _simple(step: Step, ev: Evaluator) -> Ended | Returned:
    """A statement with no blocks inside; what a step hands on is its scope, updated."""
    stmt = step.stmt
    assert isinstance(stmt, ast.Assign | ast.ExprStmt | ast.Return)
    value = await ev.evaluate(stmt.value) if stmt.value is not None else None
    return Returned(value) if step.returns else {**ev.values, step.writes[0]: value}


async def _inner(ev: Evaluator, block: Block | None) -> Ended | Returned:
    """Run an inner block (None: nothing); what it assigns updates the enclosing scope."""
    ended = await _BlockRun(ev, block).run() if block else {}
    return ended if isinstance(ended, Returned) else {**ev.values, **ended}


async def _if(step: Step, ev: Evaluator) -> Ended | Returned:
    assert isinstance(step.stmt, ast.If)
    return await _inner(ev, step.blocks[0 if await ev.evaluate(step.stmt.cond) else 1])


async def _match(step: Step, ev: Evaluator) -> Ended | Returned:
    """Run the first arm whose text is the value (an enum by its value), else the `else` arm."""
    assert isinstance(step.stmt, ast.Match)
    value = await ev.evaluate(step.stmt.subject)
    value = value.value if isinstance(value, Enum) else value
    for arm, block in zip(step.stmt.arms, step.blocks, strict=False):
        if arm.pattern is None or (isinstance(value, str) and arm.pattern == value):
            return await _inner(ev, block)
    return ev.values


async def _loop(step: Step, ev: Evaluator) -> Ended | Returned:
    """Rounds one after another; what a round assigns is what the next one reads."""
    stmt, body, env = step.stmt, step.blocks[0], dict(ev.values)
    assert isinstance(stmt, ast.Loop) and body is not None
    for number, item in enumerate(await ev.rounds(stmt), 1):
        await _before_round(step, number)
        if stmt.var is not None:
            env[stmt.var.id] = item
        ended = await _BlockRun(ev.within(env), body).run()
        if isinstance(ended, Returned):
            return ended
        env.update(ended)
        if stmt.until is not None and await ev.within(env).evaluate(stmt.until):
            break
    return env


async def _before_round(step: Step, number: int) -> None:
    """Let the deadline in force (the run's wall clock, a cancel scope) stop the loop, and
    stop a loop whose rounds call models once the budget has nothing left for them.

    A round that only computes has no checkpoint of its own, so the loop takes one when the
    deadline has passed (or its scope was cancelled): anyio's cancellation lands there.
    """
    if anyio.current_time() >= anyio.current_effective_deadline():
        await anyio.lowlevel.checkpoint()
    if step.spends:
        stop = nothing_left(
            current_scope().ledger,
            lambda: f"the loop at line {step.stmt.line} stopped before round {number}",
        )
        if stop is not None:
            raise stop


async def _session(step: Step, ev: Evaluator) -> Ended | Returned:
    """A session, open while its block runs (however the block ends)."""
    stmt, body = step.stmt, step.blocks[0]
    assert isinstance(stmt, ast.Session) and body is not None
    card_vars = {kw.name: await ev.evaluate(kw.value) for kw in stmt.keywords}
    async with agent_session(stmt.agent.id, **card_vars) as handle:
        ended = await _BlockRun(ev.within({**ev.values, SESSION: handle}), body).run()
    return ended if isinstance(ended, Returned) else {**ev.values, **ended}


_STEPS: dict[type, Callable[[Step, Evaluator], Awaitable[Ended | Returned]]] = {
    ast.If: _if,
    ast.Match: _match,
    ast.Loop: _loop,
    ast.Session: _session,
}


@dataclass
class Evaluator:
    """`await evaluate(node)`: the value of one expression with the names in `values`."""

    program: Program
    imports: dict[str, object]
    agents: frozenset[str]
    values: dict[str, Any]

    def within(self, values: dict[str, Any]) -> Evaluator:
        """An evaluator of the same run that knows `values`."""
        return dataclasses.replace(self, values=values)

    def fail(self, node: ast.Node, message: str) -> DslError:
        """A located run-time error in the flow's own expressions."""
        diag = Diagnostic.at(node, "runtime", message, self.program.filename)
        return DslError([diag], self.program.source)

    async def evaluate(self, node: ast.Node) -> Any:
        """The value of `node`: a constant as written, a list item by item, the rest by kind."""
        if isinstance(node, ast.Number | ast.Const):
            return literal_value(node)
        if isinstance(node, ast.ListExpr):
            return [await self.evaluate(item) for item in node.items]
        return await _EXPRESSIONS[type(node)](self, node)

    async def name(self, node: ast.Name) -> Any:
        if node.id not in self.values:
            return self.callable_of(node)
        value = self.values[node.id]
        if value is UNSET:
            raise self.fail(
                node,
                f"'{node.id}' has no value here: it is assigned only in a branch "
                "of an if or match, or a loop, that did not run",
            )
        return value

    def callable_of(self, node: ast.Name) -> Any:
        """An agent, import or built-in named as a value (a pipeline stage, say)."""
        if node.id in self.agents:
            return functools.partial(agent, node.id)
        if node.id in self.imports:
            return self.imports[node.id]
        return budget if node.id == "budget" else value_of(node.id)

    async def string(self, node: ast.Str) -> str:
        parts = [node.texts[0]]
        for inner, text in zip(node.values, node.texts[1:], strict=True):
            value = await self.evaluate(inner)
            parts += [value if isinstance(value, str) else render_prompt(value), text]
        return "".join(parts)

    async def attribute(self, node: ast.Attribute) -> Any:
        base = await self.evaluate(node.value)
        if isinstance(base, Mapping) and node.attr in base:
            return base[node.attr]
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.fail(node, f"{_describe(base)} has no attribute '{node.attr}'") from None

    async def index(self, node: ast.Index) -> Any:
        base, key = await self.evaluate(node.value), await self.evaluate(node.index)
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        try:
            return base[key]
        except (IndexError, KeyError, TypeError) as exc:
            raise self.fail(
                node, f"cannot take [{key!r}] of {_describe(base)}: {type(exc).__name__}: {exc}"
            ) from None

    async def unary(self, node: ast.Unary) -> Any:
        value = await self.evaluate(node.operand)
        if node.op == "not":
            return not value
        try:
            return -value
        except TypeError:
            raise self.fail(node, f"cannot negate {_describe(value)}") from None

    async def binary(self, node: ast.Binary) -> Any:
        left = await self.evaluate(node.left)
        if node.op in ("and", "or"):
            return await self.evaluate(node.right) if bool(left) == (node.op == "and") else left
        right = await self.evaluate(node.right)
        try:
            return _ARITHMETIC[node.op](left, right)
        except (TypeError, ZeroDivisionError, ValueError) as exc:
            raise self.fail(
                node, f"cannot compute {_describe(left)} {node.op} {_describe(right)}: {exc}"
            ) from None

    async def call(self, node: ast.Call) -> Any:
        """Agents, operators and imports are awaited; a built-in's mistakes are located."""
        name = node.func.id
        if name == "parallel":
            return await self.parallel(node)
        if name == "pipeline":
            return await self.pipeline(node)
        fn = self.callable_of(node.func)
        args = [await self.evaluate(a) for a in node.args]
        args += [functools.partial(self.run_body, lam) for lam in node.lambdas]
        if name in self.agents:
            args = args or [""]  # an agent called with no prompt
        elif name not in self.imports and name not in OPERATORS:
            try:
                return fn(*args)
            except (TypeError, ValueError, OverflowError) as exc:
                raise self.fail(node, f"{name}(...) failed: {exc}") from None
        return await _call(fn, *args, **await self.options(node))

    async def options(self, node: ast.Call) -> dict[str, Any]:
        """A call's `name: value` options; a team's `lead` and `roles` name agents, bare."""
        found: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.name in ("lead", "roles") and node.func.id == "team":
                found[kw.name] = _agent_names(kw.value)
            else:
                found[kw.name] = await self.evaluate(kw.value)
        return found

    async def pipeline(self, node: ast.Call) -> list[Any]:
        """`pipeline(items, stages...) |x| {...}`: collected into a list of outcomes."""
        first = node.args[0]
        if ast.is_call(first, "parallel"):  # stream branches into the first stage as they finish
            source = await self.parallel(first, stream=True)
        else:
            source = await self.evaluate(first)
        stages = [functools.partial(_call, await self.evaluate(a)) for a in node.args[1:]]
        stages += [functools.partial(self.run_body, lam) for lam in node.lambdas]
        stream = pipeline(source, *stages, **await self.options(node))
        try:
            return await stream.collect()
        finally:
            await stream.aclose()

    async def parallel(self, node: ast.Call, *, stream: bool = False) -> Any:
        """`parallel(n) |i| { ... }`: n branches of the body, or the streaming form."""
        n = self.count(node.args[0], await self.evaluate(node.args[0]), "parallel(n)", "branches")
        given = await self.options(node)
        try:
            check_count(n, given.get("limit"), "parallel(n)", option="limit:")
        except ConfigError as exc:
            raise self.fail(node.args[0], exc.message) from None
        factory = functools.partial(self.run_body, node.lambdas[0])  # `|i|` is the branch index
        if stream:
            given.pop("first", None)
            return parallel.stream(factory, n=n, **given)
        return await parallel(factory, n=n, **given)

    async def ask(self, node: ast.Ask) -> Any:
        prompt = await self.evaluate(node.prompt)
        output = self.imports[node.output.id] if node.output is not None else None
        return await self.values[SESSION].ask(prompt, output=output)

    async def send(self, node: ast.Send) -> Any:
        """`send` runs a turn per message and gives the last answer; `tell` adds them
        without a turn and gives none."""
        handle, value = self.values[SESSION], await self.evaluate(node.value)
        deliver = handle.send if node.turn else handle.tell
        if not node.each:
            return await deliver(value)
        answer = None
        what = "send each" if node.turn else "tell each"
        for item in self.items(node.value, value, what):
            answer = await deliver(item.value if isinstance(item, Ok) else item)
        return answer

    async def rounds(self, loop: ast.Loop) -> Iterable[Any]:
        """The items of a `for`, or `range(n)` for `repeat n` (never built as a list)."""
        value = await self.evaluate(loop.over)
        if loop.var is not None:
            return self.items(loop.over, value, "for ... in")
        return range(self.count(loop.over, value, "repeat", "rounds"))

    def count(self, node: ast.Node, value: object, what: str, unit: str) -> int:
        """A number of branches or rounds, 0 or more (a fractional one rounds down)."""
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise self.fail(node, f"{what} needs a number of {unit}, 0 or more; got {value!r}")
        if value == math.inf:
            raise self.fail(node, f"{what} needs a finite number of {unit}; got infinity")
        return int(value)

    def items(self, node: ast.Node, value: Any, what: str) -> list[Any]:
        if not isinstance(value, str | bytes | Mapping):
            with contextlib.suppress(TypeError):  # not iterable: refused below
                return list(value)
        raise self.fail(node, f"{what} needs a list; this is {_describe(value)}")

    async def run_body(self, lam: ast.Lambda, *args: Any) -> Any:
        """Run a `|x| { ... }` body with `args` bound to its names; its value."""
        env = {**self.values, **dict(zip((p.id for p in lam.params), args, strict=False))}
        body = self.program.lambdas[(lam.line, lam.column)]
        ended = await _BlockRun(self.within(env), body).run()
        return ended.value if isinstance(ended, Returned) else ended[VALUE]


_EXPRESSIONS: dict[type, Callable[[Evaluator, Any], Awaitable[Any]]] = {
    ast.Name: Evaluator.name,
    ast.Str: Evaluator.string,
    ast.Attribute: Evaluator.attribute,
    ast.Index: Evaluator.index,
    ast.Unary: Evaluator.unary,
    ast.Binary: Evaluator.binary,
    ast.Call: Evaluator.call,
    ast.Ask: Evaluator.ask,
    ast.Send: Evaluator.send,
}


def _agent_names(node: ast.Expr) -> str | list[str]:
    """`coder` is "coder", `[coder, reviewer]` is ["coder", "reviewer"] (check made sure)."""
    if isinstance(node, ast.ListExpr):
        return [item.id for item in node.items if isinstance(item, ast.Name)]
    assert isinstance(node, ast.Name)
    return node.id


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(...)`, awaited when it is async (an import may be either)."""
    result = fn(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


def _describe(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:30]!r}"
    return f"a {type(value).__name__}"
