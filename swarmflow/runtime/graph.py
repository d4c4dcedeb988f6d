"""The executed run graph: one node per operator call, nested by branch path.

Each node knows the operator it ran inside (`parent`) and, among the calls made in the same
place, the one that had finished when it started (`after`): the step it followed. Those two
relations are every edge the run followed. Nodes are recorded as plain records on the hot
path; `networkx`, Mermaid and DOT forms are built on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

MAX_DRAWN = 200
"""Nodes drawn in a diagram; the rest are counted in one summary node."""


@dataclass(slots=True)
class Node:
    """One executed operator call."""

    id: int
    operator: str
    branch: str
    parent: int | None
    label: str
    status: str = "running"
    after: int | None = None

    def row(self) -> list[Any]:
        return list(_ROW(self))


_ROW = attrgetter("id", "operator", "branch", "parent", "label", "status", "after")
"""A node's recorded row (read back by `node_of`), read in C: the run's end records every
node, two per branch of a fan-out."""


def node_of(row: Sequence[Any]) -> Node:
    """A node back from its recorded row (see `Node.row`)."""
    node_id, operator, branch, parent, label, status, after = row
    return Node(int(node_id), str(operator), str(branch), parent, str(label), str(status), after)


class RunGraph:
    """Records operator calls as they run."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._finished: dict[tuple[int | None, str], int] = {}
        """Per place (parent, branch): the call that finished there last."""

    def open(self, operator: str, branch: str, parent: int | None, label: str = "") -> int:
        node_id = len(self.nodes)
        after = self._finished.get((parent, branch))
        self.nodes.append(Node(node_id, operator, branch, parent, label or operator, after=after))
        return node_id

    def close(self, node_id: int, status: str = "ok") -> None:
        node = self.nodes[node_id]
        node.status = status
        self._finished[(node.parent, node.branch)] = node_id

    def rows(self) -> list[tuple[Any, ...]]:
        """Every node as a plain JSON-ready record (`Node.row`'s fields, as a tuple)."""
        return list(map(_ROW, self.nodes))

    def to_networkx(self) -> nx.DiGraph:
        """Nodes carry operator, branch, label and status; edges run parent -> child
        (`kind="inside"`) and from a call to the one that followed it (`kind="then"`)."""
        import networkx as nx

        g = nx.DiGraph()
        for n in self.nodes:
            g.add_node(n.id, operator=n.operator, branch=n.branch, label=n.label, status=n.status)
        for source, target, kind in edges_of(self.nodes):
            g.add_edge(source, target, kind=kind)
        return g

    def mermaid(self, max_nodes: int = MAX_DRAWN) -> str:
        """A Mermaid flowchart of the executed graph (large fan-outs are summarised)."""
        return mermaid_of(self.nodes, max_nodes)


def edges_of(nodes: Iterable[Node]) -> list[tuple[int, int, str]]:
    """`(source, target, kind)`: `inside` from an operator to a call made in it, `then` from a
    call to the next one made in the same place after it finished."""
    found: list[tuple[int, int, str]] = []
    for n in nodes:
        if n.parent is not None:
            found.append((n.parent, n.id, "inside"))
        if n.after is not None:
            found.append((n.after, n.id, "then"))
    return found


def node_text(n: Node) -> str:
    """What a node shows: its label and, when that does not say it already, its branch."""
    shown = n.label if n.label == n.operator else f"{n.operator} {n.label}"
    if n.branch and not shown.endswith(n.branch.rsplit("/", 1)[-1]):
        shown = f"{shown} @ {n.branch}"
    return shown


def drawn(
    nodes: Sequence[Node], max_nodes: int
) -> tuple[Sequence[Node], list[tuple[int, int, str]], int]:
    """What a drawing shows of a large graph: the first `max_nodes` nodes, the edges
    (`edges_of`) that start among them, and how many nodes it leaves out."""
    shown = nodes[:max_nodes]
    edges = [edge for edge in edges_of(shown) if edge[0] < max_nodes]
    return shown, edges, max(0, len(nodes) - max_nodes)


_MERMAID_ARROWS = {"inside": "-->", "then": "-.->"}
_DOT_STYLES = {"inside": "", "then": " [style=dashed]"}


def mermaid_of(nodes: Sequence[Node], max_nodes: int = MAX_DRAWN) -> str:
    """A Mermaid flowchart: unique ids `n<id>`, solid edges inside, dotted edges `then`."""
    shown, edges, left_out = drawn(nodes, max_nodes)
    lines = ["flowchart TD"]
    lines.extend(f'    n{n.id}["{_escape(node_text(n))}"]:::{n.status}' for n in shown)
    lines.extend(f"    n{s} {_MERMAID_ARROWS[kind]} n{t}" for s, t, kind in edges)
    if left_out:
        lines.append(f'    more["... {left_out} more nodes"]')
    lines.append("    classDef failed stroke:#c00;")
    lines.append("    classDef cancelled stroke:#888,stroke-dasharray: 4;")
    return "\n".join(lines)


def dot_of(nodes: Sequence[Node], name: str = "run", max_nodes: int = MAX_DRAWN) -> str:
    """The same graph as Graphviz DOT."""
    shown, edges, left_out = drawn(nodes, max_nodes)
    colors = {"failed": "#cc0000", "cancelled": "#888888", "running": "#cc8800"}
    lines = [f"digraph {_quote(name)} {{", "    rankdir=TB;", "    node [shape=box];"]
    for n in shown:
        color = colors.get(n.status, "#000000")
        lines.append(f"    n{n.id} [label={_quote(node_text(n))}, color={_quote(color)}];")
    lines.extend(f"    n{s} -> n{t}{_DOT_STYLES[kind]};" for s, t, kind in edges)
    if left_out:
        lines.append(f"    more [label={_quote(f'... {left_out} more nodes')}];")
    lines.append("}")
    return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace('"', "'")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
