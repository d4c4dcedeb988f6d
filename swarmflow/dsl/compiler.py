"""AST to IR: each statement becomes a step; its reads and writes become dependency edges.

Names are resolved statically: a step reads a name from the step that last wrote it before
(or from outside its block), so re-assigning a name never races with a reader of the old
value. A `session` block becomes an opening step, its turns chained in source order, and a
closing step. A step that may `return` waits for every step before it and holds back every
step after it. IR to `Flow` lives in to_flow.py (`build_flow`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swarmflow.dsl import ast
from swarmflow.dsl.check_context import CALLABLE_BUILTINS, HUMAN
from swarmflow.dsl.check_decls import AGENT_FIELDS
from swarmflow.dsl.ir import (
    VALUE,
    AgentSpec,
    ImportSpec,
    ParamSpec,
    Position,
    Program,
    Step,
    StepGraph,
    StepKind,
)

_OPERATOR_CALLS = frozenset({"compact", "pipeline", "human", "team", "parallel", "budget"})


def compile_module(module: ast.Module, source: str = "", filename: str = "<string>") -> Program:
    """The IR of a checked module (compile only what `check` passed: it assumes no errors)."""
    flow = module.flows[0]
    imports = [
        ImportSpec(n.local.id, n.name.id, use.module, n.line, n.column)
        for use in module.uses
        for n in use.names
    ]
    agents = [_agent_spec(a) for a in module.agents]
    compiler = _Compiler(source, {a.name for a in agents}, {i.local for i in imports})
    steps = compiler.graph(module.steps[0].stmts if module.steps else [], "s", ())
    return Program(
        name=flow.name.id,
        filename=filename,
        source=source,
        params=[_param_spec(p) for p in flow.params],
        returns=flow.returns.show() if flow.returns else None,
        agents=agents,
        edges=[(a.id, b.id) for chain in module.edges for a, b in chain.pairs()],
        limits={_LIMIT_KEYS[i.key.id]: i.value.value for i in module.budget},
        imports=imports,
        steps=steps,
        lambdas=compiler.lambdas,
        sessions=compiler.sessions,
        models=_model_refs(module),
        tool_refs=[
            (n.id, n.line, n.column)
            for decl in module.agents
            for fld in decl.fields
            if isinstance(fld.value, ast.NameList)
            for n in fld.value.items
            if fld.key.id == "tools" and n.id in compiler.globals - compiler.agents
        ],
    )


_LIMIT_KEYS = {"tokens": "tokens", "calls": "calls", "cost": "cost", "time": "seconds"}


def _param_spec(param: ast.Param) -> ParamSpec:
    if param.default is None:
        return ParamSpec(param.name.id, param.type.show())
    return ParamSpec(param.name.id, param.type.show(), literal_value(param.default), True)


def literal_value(node: Any) -> Any:
    """The Python value of a literal (defaults are literals; the checker makes sure)."""
    if isinstance(node, ast.Number):
        return int(node.value) if node.is_integer else node.value
    if isinstance(node, ast.Str):
        return "".join(node.texts)
    if isinstance(node, ast.ListExpr):
        return [literal_value(i) for i in node.items]
    return node.value if isinstance(node, ast.Const) else None


def _agent_spec(decl: ast.AgentDecl) -> AgentSpec:
    options = {AGENT_FIELDS[f.key.id]: _field_value(f.value) for f in decl.fields}
    return AgentSpec(decl.name.id, options)


def _field_value(value: ast.FieldValue) -> Any:
    if isinstance(value, ast.NameList):
        return tuple(n.id for n in value.items)
    if isinstance(value, ast.Name):
        return value.id
    return "none" if isinstance(value, ast.Const) else literal_value(value)  # `workspace none`


class _Builder:
    """Steps of one block, added in source order."""

    def __init__(self, prefix: str, bound: Iterable[str]) -> None:
        self.prefix = prefix
        self.graph = StepGraph()
        self.writers: dict[str, str] = {}
        self.bound = set(bound)
        self.outer: dict[str, None] = {}
        self.turns: dict[str, str] = {}
        self.barrier: str | None = None
        self.count = 0

    def new_id(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count - 1}"

    def resolve(self, names: Iterable[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for name in sorted(names):
            writer = self.writers.get(name)
            if writer is None and name not in self.bound:
                self.outer.setdefault(name)
            out[name] = writer
        return out

    def add(self, step: Step, handles: set[str]) -> None:
        after = set(step.after)
        for handle in handles:  # turns on one session keep their source order
            if handle in self.turns:
                after.add(self.turns[handle])
            self.turns[handle] = step.id
        if step.returns:
            after.update(self.graph.steps)
        elif self.barrier is not None:
            after.add(self.barrier)
        step.after = tuple(sorted(after - {step.id}))
        self.graph.add(step)
        for name in step.writes:
            self.writers[name] = step.id
        if step.returns:
            self.barrier = step.id


class _Compiler:
    """Walks statements and expressions, building step graphs."""

    def __init__(self, source: str, agents: set[str], imports: set[str]) -> None:
        self.lines = source.splitlines()
        self.globals = agents | imports | CALLABLE_BUILTINS | _OPERATOR_CALLS | {HUMAN}
        self.lambdas: dict[Position, StepGraph] = {}
        self.sessions: dict[Position, str] = {}
        self.open_sessions: list[str] = []
        self.agents = agents

    def graph(self, stmts: list[ast.Stmt], prefix: str, bound: Iterable[str]) -> StepGraph:
        builder = _Builder(prefix, bound)
        self._statements(builder, stmts)
        graph = builder.graph
        graph.outer = tuple(builder.outer)
        graph.finals = dict(builder.writers)
        last = stmts[-1] if stmts else None
        if isinstance(last, ast.ExprStmt) and graph.steps:
            graph.value_step = next(reversed(graph.steps))
        return graph

    def _statements(self, builder: _Builder, stmts: list[ast.Stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Session):
                self._session(builder, stmt)
            else:
                self._statement(builder, stmt)
            if isinstance(stmt, ast.Return):
                break  # anything after it is unreachable (the checker said so)

    def _statement(self, builder: _Builder, stmt: ast.Stmt) -> None:
        sid = builder.new_id()
        reads: set[str] = set()
        handles: set[str] = set()
        step = Step(
            id=sid,
            kind="expr",
            label=self._label(stmt),
            line=stmt.line,
            column=stmt.column,
            stmt=stmt,
        )
        if isinstance(stmt, ast.If | ast.Match):
            self._branches(stmt, step, reads, handles, builder)
        elif isinstance(stmt, ast.Loop):
            self._loop(stmt, step, reads, handles, builder)
        elif not isinstance(stmt, ast.Session):  # sessions are compiled by _session
            value = stmt.value
            if value is not None:
                self._expr(value, reads, handles, sid)
            step.kind, step.agent = self._kind(stmt, value)
            step.writes = _writes(stmt)
            step.returns = isinstance(stmt, ast.Return)
        step.reads = builder.resolve(reads | handles)
        builder.add(step, handles)

    def _branches(
        self, stmt: ast.If | ast.Match, step: Step, reads: set[str], handles: set[str], b: _Builder
    ) -> None:
        """`if` and `match`: one step whose branches are step graphs; one of them runs."""
        if isinstance(stmt, ast.If):
            self._expr(stmt.cond, reads, handles, step.id)
            blocks = [("then", stmt.then), ("else", stmt.orelse)]
        else:
            self._expr(stmt.subject, reads, handles, step.id)
            blocks = [(_arm_title(arm), arm.body) for arm in stmt.arms]
        graphs = [
            self.graph(block.stmts, f"{step.id}.b{i}.", ()) if block else None
            for i, (_, block) in enumerate(blocks)
        ]
        self._inner(graphs, reads, handles)
        writes = sorted({n for g in graphs if g for n in g.finals} - {VALUE})
        step.kind, step.branches, step.writes = "if", tuple(graphs), tuple(writes)
        step.titles = tuple(title for title, _ in blocks)
        step.returns = any(g is not None and _may_return(g) for g in graphs)
        step.priors = b.resolve(writes)

    def _loop(
        self, stmt: ast.Loop, step: Step, reads: set[str], handles: set[str], b: _Builder
    ) -> None:
        """A loop: one step that runs its body's step graph once per round."""
        self._expr(stmt.over, reads, handles, step.id)
        bound = (stmt.var.id,) if stmt.var else ()
        body = self.graph(stmt.body.stmts, f"{step.id}.b0.", bound)
        if stmt.until is not None:
            until: set[str] = set()
            self._expr(stmt.until, until, handles, step.id)
            reads.update(n for n in until if n not in body.finals)
        self._inner([body], reads, handles)
        writes = sorted(set(body.finals) - {VALUE})
        step.kind, step.branches, step.writes = "loop", (body,), tuple(writes)
        step.titles = ("round",)
        step.returns = _may_return(body)
        step.priors = b.resolve(writes)

    def _inner(self, graphs: list[StepGraph | None], reads: set[str], handles: set[str]) -> None:
        """What blocks inside a step read from outside it becomes what the step reads."""
        for graph in graphs:
            if graph is not None:
                reads.update(n for n in graph.outer if n not in self.globals)
                handles.update(n for n in graph.outer if n.startswith("@"))

    def _session(self, builder: _Builder, stmt: ast.Session) -> None:
        handle = f"@session:{stmt.line}:{stmt.column}"
        reads: set[str] = set()
        for kw in stmt.keywords:
            self._expr(kw.value, reads, set(), handle)
        opening = Step(
            id=builder.new_id(),
            kind="session",
            label=f"session {stmt.agent.id}",
            line=stmt.line,
            column=stmt.column,
            stmt=stmt,
            writes=(handle,),
            session=handle,
            agent=stmt.agent.id,
        )
        opening.reads = builder.resolve(reads)
        builder.add(opening, {handle})
        self.open_sessions.append(handle)
        try:
            self._statements(builder, stmt.body.stmts)
        finally:
            self.open_sessions.pop()
        closing = Step(
            id=builder.new_id(),
            kind="session_end",
            label=f"end {stmt.agent.id}",
            line=stmt.body.end_line,
            column=stmt.body.end_column - 1,
            stmt=None,
            session=handle,
            agent=stmt.agent.id,
        )
        closing.reads = builder.resolve({handle})
        builder.add(closing, {handle})

    def _kind(self, stmt: ast.Stmt, value: Any) -> tuple[StepKind, str | None]:
        if isinstance(stmt, ast.Return):
            return "return", None
        if isinstance(value, ast.Call):
            name = value.func.id
            if name in self.agents:
                return "agent", name
            if name in _OPERATOR_CALLS:
                return "operator", None
            return ("call", None) if name not in CALLABLE_BUILTINS else ("expr", None)
        if isinstance(value, ast.Ask | ast.Send):
            return "operator", None
        return "expr", None

    def _expr(self, node: Any, reads: set[str], handles: set[str], owner: str) -> None:
        """Collect the names an expression reads; compile the bodies inside it."""
        stack: list[Any] = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.Name):
                if item.id not in self.globals:
                    reads.add(item.id)
            elif isinstance(item, ast.Lambda):
                self._lambda(item, reads, handles)
            elif isinstance(item, ast.Ask | ast.Send):
                self._turn(item, handles)
                stack.append(item.prompt if isinstance(item, ast.Ask) else item.value)
            else:
                stack.extend(ast.children(item))

    def _turn(self, node: ast.Ask | ast.Send, handles: set[str]) -> None:
        if self.open_sessions:
            handle = self.open_sessions[-1]
            self.sessions[(node.line, node.column)] = handle
            handles.add(handle)

    def _lambda(self, lam: ast.Lambda, reads: set[str], handles: set[str]) -> None:
        params = [p.id for p in lam.params]
        prefix = f"L{lam.line}_{lam.column}.s"
        body = self.graph(lam.body.stmts, prefix, params)
        self.lambdas[(lam.line, lam.column)] = body
        for name in body.outer:
            if name.startswith("@"):
                handles.add(name)
            elif name not in self.globals:
                reads.add(name)

    def _label(self, stmt: ast.Stmt) -> str:
        if not 1 <= stmt.line <= len(self.lines):
            return type(stmt).__name__.lower()
        line = self.lines[stmt.line - 1]
        more = stmt.end_line > stmt.line
        text = line[stmt.column - 1 :] if more else line[stmt.column - 1 : stmt.end_column - 1]
        text = text.strip()
        if len(text) > 60:
            text, more = text[:57], True
        return text + (" …" if more else "")


def _model_refs(module: ast.Module) -> list[tuple[str, int, int]]:
    """Names used as `output:` and `ask ... as` models, with where."""
    refs: list[ast.Expr | None] = []
    for item in (n for block in module.steps for n in ast.walk(block)):
        if isinstance(item, ast.Ask):
            refs.append(item.output)
        elif isinstance(item, ast.Call):
            refs.extend(kw.value for kw in item.keywords if kw.name == "output")
    found = [(r.id, r.line, r.column) for r in refs if isinstance(r, ast.Name)]
    return sorted(found, key=lambda ref: ref[1:])


def _arm_title(arm: ast.Arm) -> str:
    return "else" if arm.pattern is None else f'"{arm.pattern}"'


def _may_return(graph: StepGraph) -> bool:
    return any(step.returns for step in graph.steps.values())


def _writes(stmt: ast.Stmt) -> tuple[str, ...]:
    if isinstance(stmt, ast.Assign):
        return (stmt.target.id,)
    if isinstance(stmt, ast.ExprStmt):
        return (VALUE,)
    return ()
