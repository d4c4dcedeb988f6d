"""No import cycle inside a layer: each concept's module can be read without its callers.

Every import counts, those under `TYPE_CHECKING` and inside functions too: a cycle hidden in a
function is still two modules that cannot be understood apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "swarmflow"

LAYERS = {
    "core": ("swarmflow.core",),
    "adapters": ("swarmflow.models", "swarmflow.tools", "swarmflow.workspaces", "swarmflow.sinks"),
    "runtime": ("swarmflow.runtime",),
    "operators": ("swarmflow.operators",),
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(modules: dict[str, Path]) -> nx.DiGraph:
    """Module -> every swarmflow module it imports (a `from pkg import mod` names `pkg.mod`)."""
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph.add_edges_from((name, t) for t in targets if t in modules and t != name)
    return graph


def _in_layer(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_import_cycle_within_a_layer(layer: str) -> None:
    modules = _modules()
    graph = import_graph(modules)
    inside = graph.subgraph(m for m in graph if _in_layer(m, LAYERS[layer]))
    assert list(nx.simple_cycles(inside)) == []


def test_the_check_sees_a_cycle() -> None:
    graph = import_graph(_modules())
    graph.add_edge("swarmflow.core.errors", "swarmflow.core.states")
    inside = graph.subgraph(m for m in graph if _in_layer(m, LAYERS["core"]))
    assert list(nx.simple_cycles(inside)) != []
