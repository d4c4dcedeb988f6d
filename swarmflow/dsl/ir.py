"""The graph IR: each step is a node, each data dependency an edge.

A `StepGraph` holds the steps of one block (the flow's steps, an `if` branch, or a
`|x| { ... }` body) in a `networkx.DiGraph`. A step runs as soon as the steps it depends on
are done, so steps with no path between them run concurrently. `Program` is the whole flow:
signature, team, budget, imports and the top-level step graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from swarmflow.dsl import ast

StepKind = Literal[
    "agent", "operator", "call", "expr", "if", "loop", "return", "session", "session_end"
]
Position = tuple[int, int]
VALUE = "@value"
"""The name under which an expression step keeps its value."""


@dataclass
class Step:
    """One node: a statement, what it reads (and from which step), and what it writes."""

    id: str
    kind: StepKind
    label: str
    line: int
    column: int
    stmt: ast.Stmt | None = None
    reads: dict[str, str | None] = field(default_factory=dict)
    """Each name it reads, with the step in this graph that writes it (None: from outside)."""
    priors: dict[str, str | None] = field(default_factory=dict)
    """For an `if`: the values its names had before, kept when the branch taken leaves them."""
    writes: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    """Steps it must follow without reading from them: session turns, `return` barriers."""
    branches: tuple[StepGraph | None, ...] = ()
    """An `if`'s or `match`'s alternatives, or a loop's body."""
    titles: tuple[str, ...] = ()
    """What each branch is called in a diagram: then/else, an arm's text, round."""
    returns: bool = False
    session: str | None = None
    agent: str | None = None

    def depends_on(self) -> set[str]:
        found = {w for w in self.reads.values() if w is not None}
        found.update(w for w in self.priors.values() if w is not None)
        found.update(self.after)
        return found


@dataclass
class StepGraph:
    """The steps of one block and their dependencies."""

    steps: dict[str, Step] = field(default_factory=dict)
    graph: Any = field(default_factory=nx.DiGraph)
    outer: tuple[str, ...] = ()
    """Names this block reads from the enclosing one."""
    finals: dict[str, str] = field(default_factory=dict)
    """Each name the block assigns, with the step that assigns it last."""
    value_step: str | None = None
    """The step whose value is the block's value when it ends without `return`."""

    def add(self, step: Step) -> None:
        self.steps[step.id] = step
        self.graph.add_node(step.id, kind=step.kind, label=step.label, line=step.line)
        for dep in sorted(step.depends_on()):
            self.graph.add_edge(dep, step.id)

    def order(self) -> dict[str, int]:
        """Source order of the steps (the scheduler starts ready steps in this order)."""
        return {sid: i for i, sid in enumerate(self.steps)}

    def independent(self, a: str, b: str) -> bool:
        """Whether neither step depends, directly or not, on the other."""
        return not (nx.has_path(self.graph, a, b) or nx.has_path(self.graph, b, a))


@dataclass(frozen=True)
class ParamSpec:
    """One input of the flow."""

    name: str
    type: str
    default: Any = None
    has_default: bool = False


@dataclass(frozen=True)
class AgentSpec:
    """One agent as declared: its name, and the `Agent(...)` options its fields give."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ImportSpec:
    """`use name as local from module`, with where it was written."""

    local: str
    name: str
    module: str
    line: int
    column: int


@dataclass
class Program:
    """A compiled flow: everything needed to build a `swarmflow.Flow` and run its steps."""

    name: str
    filename: str
    source: str
    params: list[ParamSpec]
    returns: str | None
    agents: list[AgentSpec]
    edges: list[tuple[str, str]]
    limits: dict[str, float]
    imports: list[ImportSpec]
    steps: StepGraph
    lambdas: dict[Position, StepGraph] = field(default_factory=dict)
    sessions: dict[Position, str] = field(default_factory=dict)
    """Which session handle each `ask`/`send` (by position) talks to."""
    models: list[tuple[str, int, int]] = field(default_factory=list)
    """Names used as `output:` / `as` models, with where, to verify once imported."""
    tool_refs: list[tuple[str, int, int]] = field(default_factory=list)
    """Imported names listed in an agent's `tools`, with where, to verify once imported."""

    def steps_mermaid(self) -> str:
        """The step graph as a Mermaid flowchart; `if` branches are subgraphs."""
        lines = ["flowchart TD"]
        _mermaid_graph(self.steps, lines, "    ")
        return "\n".join(lines)

    def steps_dot(self) -> str:
        """The step graph in Graphviz DOT."""
        lines = [f'digraph "{self.name}_steps" {{', "    node [shape=box];"]
        _dot_graph(self.steps, lines, "    ")
        lines.append("}")
        return "\n".join(lines)


_SHAPES = {
    "agent": ("[", "]"),
    "operator": ("[[", "]]"),
    "call": ("[/", "/]"),
    "if": ("{", "}"),
    "loop": ("{{", "}}"),
    "return": ("([", "])"),
    "session": ("[(", ")]"),
    "session_end": ("[(", ")]"),
    "expr": ("(", ")"),
}


def _mermaid_graph(graph: StepGraph, lines: list[str], indent: str) -> None:
    for step in graph.steps.values():
        left, right = _SHAPES[step.kind]
        lines.append(f'{indent}{_node_id(step.id)}{left}"{_escape(step.label)}"{right}')
        for i, branch in enumerate(step.branches):
            if branch is None or not branch.steps:
                continue
            title = _escape(step.titles[i])
            lines.append(f'{indent}subgraph {_node_id(step.id)}_b{i}["{title}"]')
            _mermaid_graph(branch, lines, indent + "    ")
            lines.append(f"{indent}end")
            lines.append(f"{indent}{_node_id(step.id)} -.-> {_node_id(step.id)}_b{i}")
    for a, b in _shown_edges(graph):
        lines.append(f"{indent}{_node_id(a)} --> {_node_id(b)}")


def _dot_graph(graph: StepGraph, lines: list[str], indent: str) -> None:
    for step in graph.steps.values():
        lines.append(f'{indent}"{step.id}" [label="{_escape(step.label)}"];')
        for i, branch in enumerate(step.branches):
            if branch is None or not branch.steps:
                continue
            title = _escape(step.titles[i])
            lines.append(f'{indent}subgraph "cluster_{step.id}_{i}" {{')
            lines.append(f'{indent}    label="{title}";')
            _dot_graph(branch, lines, indent + "    ")
            lines.append(f"{indent}}}")
            first = next(iter(branch.steps))
            lines.append(f'{indent}"{step.id}" -> "{first}" [style=dashed];')
    for a, b in _shown_edges(graph):
        lines.append(f'{indent}"{a}" -> "{b}";')


def _shown_edges(graph: StepGraph) -> list[tuple[str, str]]:
    """The edges worth drawing: none that a longer path already implies."""
    reduced = nx.transitive_reduction(graph.graph)
    order = graph.order()
    return sorted(reduced.edges, key=lambda e: (order[e[0]], order[e[1]]))


def _node_id(step_id: str) -> str:
    return step_id.replace(".", "_")


def _escape(text: str) -> str:
    return text.replace('"', "'")
