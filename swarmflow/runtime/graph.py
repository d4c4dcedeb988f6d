"""The executed run graph: one node per operator call, nested by branch path.

Nodes are recorded as plain tuples on the hot path; the `networkx` graph is built on demand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx


@dataclass(slots=True)
class Node:
    """One executed operator call."""

    id: int
    operator: str
    branch: str
    parent: int | None
    label: str
    status: str = "running"


class RunGraph:
    """Records operator calls as they run."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def open(self, operator: str, branch: str, parent: int | None, label: str = "") -> int:
        node_id = len(self.nodes)
        self.nodes.append(Node(node_id, operator, branch, parent, label or operator))
        return node_id

    def close(self, node_id: int, status: str = "ok") -> None:
        self.nodes[node_id].status = status

    def to_networkx(self) -> nx.DiGraph:
        """Nodes carry operator, branch, label and status; edges run parent -> child."""
        import networkx as nx

        g = nx.DiGraph()
        for n in self.nodes:
            g.add_node(n.id, operator=n.operator, branch=n.branch, label=n.label, status=n.status)
            if n.parent is not None:
                g.add_edge(n.parent, n.id)
        return g

    def mermaid(self, max_nodes: int = 200) -> str:
        """A Mermaid flowchart of the executed graph (large fan-outs are summarised)."""
        lines = ["flowchart TD"]
        shown = self.nodes[:max_nodes]
        for n in shown:
            text = _escape(f"{n.label} {n.branch}".strip())
            lines.append(f'    n{n.id}["{text}"]:::{n.status}')
        lines.extend(
            f"    n{n.parent} --> n{n.id}"
            for n in shown
            if n.parent is not None and n.parent < max_nodes
        )
        if len(self.nodes) > max_nodes:
            lines.append(f'    more["... {len(self.nodes) - max_nodes} more nodes"]')
        lines.append("    classDef failed stroke:#c00;")
        lines.append("    classDef cancelled stroke:#888,stroke-dasharray: 4;")
        return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace('"', "'")
