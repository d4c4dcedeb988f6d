"""The plan of a flow: its steps, what each reads and writes, and which steps it waits for.

Each statement of a block is a step. Names are resolved statically: a step reads a name from
the step that last wrote it before (or from outside its block), so re-assigning a name never
races with a reader of the old value. A step with blocks inside (`if`, `match`, a loop, a
`session`) reads what they read and writes what they assign; a turn reads and writes its
session, so turns keep their source order.
A step that may `return` waits for every step before it and holds back every step after it.
`swarmflow graph` draws the plan; the run schedules it (run.py).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from swarmflow.dsl.check.callables import callable_names, names
from swarmflow.dsl.check.check import check_module
from swarmflow.dsl.check.decls import AGENT_FIELDS
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import DslError
from swarmflow.dsl.syntax.parser import parse_module

VALUE = "(value)"
"""The name under which an expression statement keeps its value."""
SESSION = "@session"
"""The name under which a `session` block keeps its session, for the turns inside it."""
Position = tuple[int, int]
OPERATORS = names("operator")
_LIMIT_KEYS = {"tokens": "tokens", "calls": "calls", "cost": "cost", "time": "seconds"}


@dataclass
class Step:
    """One statement: the names it reads (with the step of its block that wrote each, None:
    from outside), the names it writes, the steps it waits for, and its inner blocks."""

    id: str
    kind: str
    label: str
    stmt: ast.Stmt
    reads: dict[str, str | None] = field(default_factory=dict)
    writes: tuple[str, ...] = ()
    waits: set[str] = field(default_factory=set)
    blocks: tuple[Block | None, ...] = ()
    """An `if`'s or `match`'s alternatives (one runs), a loop's body, or a session's turns."""
    titles: tuple[str, ...] = ()
    returns: bool = False
    spends: bool = False
    """A loop whose rounds may call a model (an agent, `team`, `ask` or `send`): it stops once
    the budget has nothing left for them."""


@dataclass
class Block:
    """The steps of one block: the flow's, a branch's, a loop's or a `|x| { ... }` body's."""

    steps: dict[str, Step] = field(default_factory=dict)
    outer: dict[str, None] = field(default_factory=dict)
    """Names the block reads from the enclosing one, in the order first read."""
    finals: dict[str, str] = field(default_factory=dict)
    """Each name the block assigns, with the step that assigns it last."""
    value_step: str | None = None
    """The step whose value is the block's when it ends without `return`."""


@dataclass(frozen=True)
class AgentSpec:
    """One agent as declared: its name, and the `Agent(...)` options its fields give."""

    name: str
    options: dict[str, Any]


@dataclass
class Program:
    """A checked flow, planned: everything needed to build a `swarmflow.Flow` and run it."""

    name: str
    filename: str
    source: str
    params: list[inspect.Parameter]
    """The flow's inputs, as its signature has them (`annotation` is the type as written)."""
    returns: str | None
    agents: list[AgentSpec]
    edges: list[tuple[str, str]]
    limits: dict[str, float]
    module: ast.Module
    steps: Block
    lambdas: dict[Position, Block]
    models: list[ast.Name]
    """Names used as an answer's model (`output: M`, `ask ... as M`), in source order."""

    def steps_mermaid(self) -> str:
        """The steps as a Mermaid flowchart; inner blocks are subgraphs."""
        return "\n".join(["flowchart TD", *_drawn(self.steps, "mermaid", "    ")])

    def steps_dot(self) -> str:
        """The steps in Graphviz DOT."""
        head = [f'digraph "{self.name}_steps" {{', "    node [shape=box];"]
        return "\n".join([*head, *_drawn(self.steps, "dot", "    "), "}"])


def compile_source(
    source: str, filename: str = "<string>", *, base_dir: str | None = None
) -> Program:
    """The plan of steps of `.swarm` text; raises `DslError` if `check` finds errors."""
    module, found = parse_module(source, filename)
    if module is not None:
        found += check_module(module, filename, base_dir=base_dir)
    errors = [d for d in found if d.is_error]
    if module is None or errors:
        raise DslError(found if module is None else errors, source)
    return plan_module(module, source, filename)


def plan_module(module: ast.Module, source: str = "", filename: str = "<string>") -> Program:
    """The plan of a checked module (plan only what `check` passed: it assumes no errors)."""
    flow = module.flows[0]
    agents = [
        AgentSpec(a.name.id, {AGENT_FIELDS[f.key.id]: _field_value(f.value) for f in a.fields})
        for a in module.agents
    ]
    planner = _Planner(
        source, {a.name for a in agents}, {n.local.id for u in module.uses for n in u.names}
    )
    return Program(
        name=flow.name.id,
        filename=filename,
        source=source,
        params=[
            inspect.Parameter(
                p.name.id,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=p.type.show(),
                default=inspect.Parameter.empty if p.default is None else literal_value(p.default),
            )
            for p in flow.params
        ],
        returns=flow.returns.show() if flow.returns else None,
        agents=agents,
        edges=[(a.id, b.id) for chain in module.edges for a, b in chain.pairs()],
        limits={_LIMIT_KEYS[i.key.id]: i.value.value for i in module.budget},
        module=module,
        steps=planner.block(module.steps[0].stmts if module.steps else [], "s"),
        lambdas=planner.lambdas,
        models=sorted(planner.models, key=lambda n: (n.line, n.column)),
    )


def literal_value(node: object) -> object:
    """The Python value of a literal (defaults are literals; the checker makes sure)."""
    if isinstance(node, ast.Number):
        return int(node.value) if node.is_integer else node.value
    if isinstance(node, ast.Str):
        return "".join(node.texts)
    if isinstance(node, ast.ListExpr):
        return [literal_value(i) for i in node.items]
    return node.value if isinstance(node, ast.Const) else None


def _field_value(value: ast.FieldValue) -> Any:
    if isinstance(value, ast.NameList):
        return tuple(n.id for n in value.items)
    if isinstance(value, ast.Name):
        return value.id
    return "none" if isinstance(value, ast.Const) else literal_value(value)  # `workspace none`


class _Planner:
    """Walks statements and expressions, planning blocks."""

    def __init__(self, source: str, agents: set[str], imports: set[str]) -> None:
        self.lines = source.splitlines()
        self.agents = agents
        self.globals = {*agents, *imports, *callable_names(), *OPERATORS}
        self.lambdas: dict[Position, Block] = {}
        self.models: list[ast.Name] = []

    def block(self, stmts: list[ast.Stmt], prefix: str, bound: tuple[str, ...] = ()) -> Block:
        """Plan one block: each step reads a name from the step that last wrote it, and waits
        for those steps; a step that may `return` waits for all before and holds back all
        after it."""
        block, barrier = Block(), None
        for stmt in stmts:
            step, reads = self._step(f"{prefix}{len(block.steps)}", stmt)
            step.reads = {name: block.finals.get(name) for name in sorted(reads)}
            free = (n for n, w in step.reads.items() if w is None and n not in bound)
            block.outer.update(dict.fromkeys(free))
            if SESSION in reads and SESSION not in step.writes:
                step.writes += (SESSION,)  # a turn hands the session on to the next turn
            step.waits = {w for w in step.reads.values() if w is not None}
            if step.returns:
                step.waits.update(block.steps)
            elif barrier is not None:
                step.waits.add(barrier)
            block.steps[step.id] = step
            block.finals.update(dict.fromkeys(step.writes, step.id))
            barrier = step.id if step.returns else barrier
            if isinstance(stmt, ast.Return):
                break  # anything after it is unreachable (the checker said so)
        if stmts and isinstance(stmts[-1], ast.ExprStmt):
            block.value_step = next(reversed(block.steps))
        return block

    def _step(self, sid: str, stmt: ast.Stmt) -> tuple[Step, set[str]]:
        """A step and the names it reads; `if`, `match`, loops and sessions plan their inner
        blocks alone."""
        heads, titled = _parts(stmt)
        step, reads = Step(sid, self._kind(stmt), self._label(stmt), stmt), set[str]()
        for head in heads:
            self._expr(head, reads)
        if isinstance(stmt, ast.Assign | ast.ExprStmt | ast.Return):
            step.returns = isinstance(stmt, ast.Return)
            if not step.returns:
                step.writes = (stmt.target.id if isinstance(stmt, ast.Assign) else VALUE,)
            return step, reads
        bound = (SESSION,) if isinstance(stmt, ast.Session) else ()
        if isinstance(stmt, ast.Loop) and stmt.var:
            bound = (stmt.var.id,)
        blocks = [
            self.block(b.stmts, f"{sid}.b{i}.", bound) if b else None
            for i, (_, b) in enumerate(titled)
        ]
        inner = [b for b in blocks if b is not None]
        writes = sorted({n for b in inner for n in b.finals} - {VALUE, SESSION})
        reads.update(n for b in inner for n in b.outer)
        if isinstance(stmt, ast.Loop) and stmt.until is not None:
            self._expr(stmt.until, until := set[str]())
            reads.update(until - set(inner[0].finals))
        if not isinstance(stmt, ast.Session):  # a session's block always runs; others may not
            reads.update(writes)  # a name a run leaves unassigned keeps the value it had
        step.blocks, step.titles = tuple(blocks), tuple(t for t, _ in titled)
        step.spends = isinstance(stmt, ast.Loop) and self._spends(stmt.body)
        step.writes = tuple(writes)
        step.returns = any(s.returns for b in inner for s in b.steps.values())
        return step, reads

    def _expr(self, node: ast.Expr, reads: set[str]) -> None:
        """Add the names `node` reads; plan the `|x| { ... }` bodies inside it."""
        for item in ast.walk(node, prune=ast.Lambda):
            if isinstance(item, ast.Name) and item.id not in self.globals:
                reads.add(item.id)
            elif isinstance(item, ast.Ask | ast.Send):
                reads.add(SESSION)
                if isinstance(item, ast.Ask) and item.output is not None:
                    self.models.append(item.output)
            elif isinstance(item, ast.Keyword) and item.name == "output":
                if isinstance(item.value, ast.Name):
                    self.models.append(item.value)
            elif isinstance(item, ast.Lambda):
                names = tuple(p.id for p in item.params)
                body = self.block(item.body.stmts, f"L{item.line}_{item.column}.s", names)
                self.lambdas[(item.line, item.column)] = body
                reads.update(body.outer)

    def _spends(self, body: ast.Block) -> bool:
        """Whether running `body` may call a model, in its bodies and lambdas too."""
        for node in ast.walk(body):
            if isinstance(node, ast.Ask) or (isinstance(node, ast.Send) and node.turn):
                return True
            if isinstance(node, ast.Call) and (
                node.func.id in self.agents or node.func.id == "team"
            ):
                return True
        return False

    def _kind(self, stmt: ast.Stmt) -> str:
        """How the step is drawn: its statement, or what its statement calls."""
        if not isinstance(stmt, ast.Assign | ast.ExprStmt):
            return _KINDS[type(stmt)]
        if isinstance(stmt.value, ast.Ask | ast.Send):
            return "operator"
        name = stmt.value.func.id if isinstance(stmt.value, ast.Call) else ""
        if name in self.agents:
            return "agent"
        if name in OPERATORS:
            return "operator"
        return "call" if name and name not in callable_names() else "expr"

    def _label(self, stmt: ast.Stmt) -> str:
        line = self.lines[stmt.line - 1] if 1 <= stmt.line <= len(self.lines) else ""
        more = stmt.end_line > stmt.line
        text = line[stmt.column - 1 :] if more else line[stmt.column - 1 : stmt.end_column - 1]
        text = text.strip() or type(stmt).__name__.lower()
        if len(text) > 60:
            text, more = text[:57], True
        return text + (" …" if more else "")


_KINDS = {
    ast.Return: "return",
    ast.If: "if",
    ast.Match: "if",
    ast.Loop: "loop",
    ast.Session: "session",
}


def _parts(stmt: ast.Stmt) -> tuple[list[ast.Expr], list[tuple[str, ast.Block | None]]]:
    """What a statement evaluates first, and its inner blocks with their titles."""
    if isinstance(stmt, ast.If):
        return [stmt.cond], [("then", stmt.then), ("else", stmt.orelse)]
    if isinstance(stmt, ast.Match):
        arms: list[tuple[str, ast.Block | None]] = [
            ("else" if a.pattern is None else f'"{a.pattern}"', a.body) for a in stmt.arms
        ]
        return [stmt.subject], arms
    if isinstance(stmt, ast.Loop):
        return [stmt.over], [("round", stmt.body)]
    if isinstance(stmt, ast.Session):
        return [kw.value for kw in stmt.keywords], [("turns", stmt.body)]
    return [stmt.value] if stmt.value is not None else [], []


_SHAPES = {
    "agent": ("[", "]"),
    "operator": ("[[", "]]"),
    "call": ("[/", "/]"),
    "if": ("{", "}"),
    "loop": ("{{", "}}"),
    "return": ("([", "])"),
    "session": ("[(", ")]"),
    "expr": ("(", ")"),
}


_DRAWING = {
    "mermaid": {
        "node": '{i}{id}{left}"{label}"{right}',
        "open": '{i}subgraph {id}_b{n}["{title}"]',
        "close": "{i}end\n{i}{id} -.-> {id}_b{n}",
        "edge": "{i}{a} --> {b}",
    },
    "dot": {
        "node": '{i}"{id}" [label="{label}"];',
        "open": '{i}subgraph "cluster_{id}_{n}" {{\n{i}    label="{title}";',
        "close": '{i}}}\n{i}"{id}" -> "{first}" [style=dashed];',
        "edge": '{i}"{a}" -> "{b}";',
    },
}


def _drawn(block: Block, fmt: str, i: str) -> list[str]:
    """The lines that draw `block` in Mermaid or DOT; edges a longer path implies are left out."""
    draw, lines = _DRAWING[fmt], []

    def key(sid: str) -> str:
        return sid.replace(".", "_") if fmt == "mermaid" else sid

    for step in block.steps.values():
        left, right = _SHAPES[step.kind]
        label = step.label.replace('"', "'")
        lines.append(draw["node"].format(i=i, id=key(step.id), left=left, right=right, label=label))
        for n, inner in enumerate(step.blocks):
            if inner is None or not inner.steps:
                continue
            at = {"i": i, "id": key(step.id), "n": n, "first": next(iter(inner.steps))}
            lines.append(draw["open"].format(**at, title=step.titles[n].replace('"', "'")))
            lines += [*_drawn(inner, fmt, i + "    "), draw["close"].format(**at)]
    graph = nx.DiGraph([(w, s.id) for s in block.steps.values() for w in s.waits])
    order = {sid: n for n, sid in enumerate(block.steps)}
    for a, b in sorted(
        nx.transitive_reduction(graph).edges, key=lambda e: (order[e[0]], order[e[1]])
    ):
        lines.append(draw["edge"].format(i=i, a=key(a), b=key(b)))
    return lines
