"""No import cycle anywhere in the package: each module can be read without its callers.

Every import counts, those under `TYPE_CHECKING` and inside functions too: a cycle hidden in a
function is still two modules that cannot be understood apart. Importing a package counts as
importing its `__init__`, and a lazy package's `__init__` imports (for type checkers) the
modules that define its names: a module that imports its own lazy package closes a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "swarmflow"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _targets(source: str, modules: dict[str, Path], package: str = "") -> set[str]:
    """The swarmflow modules `source` imports (a `from pkg import mod` names `pkg.mod` too);
    `package` is the one a relative import starts from."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            where = node.module or ""
            if node.level:  # relative: from the package, up `level - 1` packages
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                where = ".".join([*base, *([where] if where else [])])
            found.update([where, *(f"{where}.{a.name}" for a in node.names)])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found & set(modules)


def import_graph(modules: dict[str, Path]) -> nx.DiGraph:
    """Module -> every swarmflow module it imports, wherever the import is written."""
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = _targets(path.read_text(), modules, package)
        graph.add_edges_from((name, t) for t in targets if t != name)
    return graph


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    """One cycle through each strongly connected part of the graph (each is a cycle to break)."""
    return [
        nx.find_cycle(graph.subgraph(part), next(iter(part)))
        for part in nx.strongly_connected_components(graph)
        if len(part) > 1
    ]


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(import_graph(_modules())) == []


def test_the_check_sees_a_cycle() -> None:
    graph = import_graph(_modules())
    graph.add_edge("swarmflow.core.errors", "swarmflow.core.states")
    graph.add_edge("swarmflow.core.states", "swarmflow.core.errors")
    assert _cycles(graph) != []


def test_the_check_sees_a_cycle_across_layers() -> None:
    graph = import_graph(_modules())
    graph.add_edge("swarmflow.core.team", "swarmflow.runtime.flow")  # runtime.flow uses core.team
    assert _cycles(graph) != []


def test_the_check_sees_a_module_importing_its_own_lazy_package() -> None:
    """`from swarmflow.dsl import DslError` inside swarmflow/dsl: the package's `__init__`
    imports the parser (under `TYPE_CHECKING`), which would then import the package."""
    modules = _modules()
    graph = import_graph(modules)
    assert graph.has_edge("swarmflow.dsl", "swarmflow.dsl.syntax.parser")
    source = "from swarmflow.dsl import DslError\n"
    graph.add_edges_from(("swarmflow.dsl.syntax.parser", t) for t in _targets(source, modules))
    assert _cycles(graph) != []
