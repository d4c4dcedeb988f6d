"""The dataflow executor: each step starts as soon as the steps it depends on are done.

The order comes from the standard library's `graphlib.TopologicalSorter` over the step graph.
A chain of steps runs in the caller's task, exactly as the same awaits written in Python
would. Once two steps are ready at once, they run concurrently in an anyio task group
(started in source order; each task carries on with a step it made ready). A failing step
cancels the others, and its exception (not an exception group) is what the flow raises, so
`RunPaused`, `TopologyError` and the rest reach the runner as themselves. Sessions a block
opened are closed when it ends, however it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from graphlib import TopologicalSorter
from typing import Any

import anyio
from anyio.abc import TaskGroup

from swarmflow.dsl import ast
from swarmflow.dsl.evaluate import UNSET, Evaluator, Runtime
from swarmflow.dsl.ir import VALUE, Program, Step, StepGraph
from swarmflow.operators import agent_session
from swarmflow.operators.agent_session import SessionHandle


@dataclass(frozen=True, slots=True)
class Returned:
    """A `return` ran: the block (and any block waiting on it) ends with this value."""

    value: Any


@dataclass
class GraphResult:
    """How a block ended: with `return`, or by running out of steps."""

    returned: bool
    value: Any
    finals: dict[str, Any] = field(default_factory=dict)


async def execute(program: Program, imports: dict[str, Any], inputs: dict[str, Any]) -> Any:
    """Run the flow's steps with `inputs`; the value of its `return` (or None)."""
    rt = Runtime(program, imports, _run_graph_value)
    result = await run_graph(rt, program.steps, inputs)
    return result.value


async def _run_graph_value(rt: Runtime, graph: StepGraph, env: dict[str, Any]) -> Any:
    return (await run_graph(rt, graph, env)).value


async def run_graph(rt: Runtime, graph: StepGraph, env: dict[str, Any]) -> GraphResult:
    """Run one block to its end."""
    return await _GraphRun(rt, graph, env).run()


class _GraphRun:
    """The state of one block while it runs."""

    def __init__(self, rt: Runtime, graph: StepGraph, env: dict[str, Any]) -> None:
        self.rt = rt
        self.graph = graph
        self.env = env
        self.order = graph.order()
        self.sorter = TopologicalSorter({sid: s.depends_on() for sid, s in graph.steps.items()})
        self.sorter.prepare()
        self.results: dict[str, dict[str, Any]] = {}
        self.returned: Returned | None = None
        self.error: BaseException | None = None
        self.handles: list[SessionHandle] = []

    async def run(self) -> GraphResult:
        try:
            await self._drive()
        finally:
            await self._close_sessions()
        if self.error is not None:
            raise self.error
        return self._result()

    async def _drive(self) -> None:
        """Run a chain in this task; open a task group only once two steps are ready."""
        ready = self._ready()
        while len(ready) == 1:
            ready = await self._run_one(ready[0])
        if not ready:
            return
        async with anyio.create_task_group() as tg:
            for sid in ready[1:]:
                tg.start_soon(self._task, sid, tg)
            await self._task(ready[0], tg)

    async def _task(self, sid: str, tg: TaskGroup) -> None:
        """Run a step, then carry on with one of the steps it made ready (start the rest)."""
        while True:
            try:
                ready = await self._run_one(sid)
            except Exception as exc:  # the first failure ends the block; run() re-raises it
                if self.error is None:
                    self.error = exc
                tg.cancel_scope.cancel()
                return
            if not ready:
                return
            sid = ready[0]
            for other in ready[1:]:
                tg.start_soon(self._task, other, tg)

    async def _run_one(self, sid: str) -> list[str]:
        """Run one step; the steps that became ready because of it, in source order."""
        out = await self._execute(self.graph.steps[sid])
        if isinstance(out, Returned):
            self.returned = out
            return []  # every later step waits on this one, so none of them starts
        self.results[sid] = out
        self.sorter.done(sid)
        return self._ready()

    def _ready(self) -> list[str]:
        """Steps whose dependencies are all done, in source order."""
        return sorted(self.sorter.get_ready(), key=self.order.__getitem__)

    def _result(self) -> GraphResult:
        if self.returned is not None:
            return GraphResult(True, self.returned.value)
        finals = {n: self.results[w][n] for n, w in self.graph.finals.items() if w in self.results}
        value = None
        if self.graph.value_step is not None:
            value = self.results.get(self.graph.value_step, {}).get(VALUE)
        return GraphResult(False, value, finals)

    def _scope(self, step: Step) -> dict[str, Any]:
        values = {name: self._lookup(name, writer) for name, writer in step.reads.items()}
        for name, writer in step.priors.items():
            values.setdefault(name, self._lookup(name, writer))
        return values

    def _lookup(self, name: str, writer: str | None) -> Any:
        if writer is None:
            return self.env.get(name, UNSET)
        return self.results[writer].get(name, UNSET)

    async def _execute(self, step: Step) -> dict[str, Any] | Returned:
        values = self._scope(step)
        ev = Evaluator(self.rt, values)
        stmt = step.stmt
        if step.kind == "session_end":
            await self._close(values[step.session or ""])
            return {}
        if isinstance(stmt, ast.Session):
            return await self._open(step, stmt, ev)
        if isinstance(stmt, ast.If | ast.Match):
            return await self._branch(step, stmt, ev)
        if isinstance(stmt, ast.Loop):
            return await self._loop(step, stmt, ev)
        if isinstance(stmt, ast.Return):
            return Returned(await ev.evaluate(stmt.value) if stmt.value is not None else None)
        assert isinstance(stmt, ast.Assign | ast.ExprStmt)
        value = await ev.evaluate(stmt.value)
        return {step.writes[0]: value}

    async def _open(self, step: Step, stmt: ast.Session, ev: Evaluator) -> dict[str, Any]:
        card_vars = {kw.name: await ev.evaluate(kw.value) for kw in stmt.keywords}
        handle = agent_session(stmt.agent.id, **card_vars)
        self.handles.append(handle)
        return {step.writes[0]: handle}

    async def _close(self, handle: SessionHandle) -> None:
        if handle in self.handles:
            self.handles.remove(handle)
        await handle.__aexit__(None, None, None)

    async def _close_sessions(self) -> None:
        with anyio.CancelScope(shield=True):
            while self.handles:
                await self._close(self.handles[-1])

    async def _branch(
        self, step: Step, stmt: ast.If | ast.Match, ev: Evaluator
    ) -> dict[str, Any] | Returned:
        """Run the branch the condition (or the matched arm) picks, if any."""
        if isinstance(stmt, ast.If):
            chosen = step.branches[0] if await ev.evaluate(stmt.cond) else step.branches[1]
        else:
            index = arm_for(await ev.evaluate(stmt.subject), stmt.arms)
            chosen = step.branches[index] if index is not None else None
        finals: dict[str, Any] = {}
        if chosen is not None:
            result = await run_graph(self.rt, chosen, ev.values)
            if result.returned:
                return Returned(result.value)
            finals = result.finals
        return {name: finals.get(name, ev.values.get(name, UNSET)) for name in step.writes}

    async def _loop(self, step: Step, stmt: ast.Loop, ev: Evaluator) -> dict[str, Any] | Returned:
        """Rounds one after another; what a round assigns is what the next one reads."""
        rounds = await ev.loop_rounds(stmt)
        env = dict(ev.values)
        for item in rounds:
            if stmt.var is not None:
                env[stmt.var.id] = item
            result = await run_graph(self.rt, step.branches[0] or StepGraph(), env)
            if result.returned:
                return Returned(result.value)
            env.update(result.finals)
            if stmt.until is not None and await Evaluator(self.rt, env).evaluate(stmt.until):
                break
        return {name: env.get(name, UNSET) for name in step.writes}


def arm_for(value: Any, arms: list[ast.Arm]) -> int | None:
    """The first arm whose text is `value` (an enum by its value), else the `else` arm."""
    if isinstance(value, Enum):
        value = value.value
    for i, arm in enumerate(arms):
        if arm.pattern is None or (isinstance(value, str) and arm.pattern == value):
            return i
    return None
