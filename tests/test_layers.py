"""Imports point inward: front, then operators, then runtime, then adapters, then core."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "swarmflow"

CORE = {"swarmflow.core"}
ADAPTERS = {"swarmflow.models", "swarmflow.tools", "swarmflow.workspaces", "swarmflow.sinks"}
RUNTIME = {"swarmflow.runtime"}
OPERATORS = {"swarmflow.operators"}

ALLOWED: dict[str, set[str]] = {
    "swarmflow.core": CORE,
    # Adapters share one layer: the shared workspace uses the tools' path and file helpers.
    "swarmflow.models": CORE | ADAPTERS,
    "swarmflow.tools": CORE | ADAPTERS,
    "swarmflow.workspaces": CORE | ADAPTERS,
    "swarmflow.sinks": CORE | ADAPTERS,
    "swarmflow.runtime": CORE | RUNTIME,
    "swarmflow.operators": CORE | RUNTIME | OPERATORS,
}


def _layer(module: str) -> str | None:
    return next(
        (layer for layer in ALLOWED if module == layer or module.startswith(layer + ".")), None
    )


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("swarmflow")}


def _allowed(target: str, allowed: set[str]) -> bool:
    return any(target == a or target.startswith(a + ".") for a in allowed)


def test_every_import_points_inward() -> None:
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        layer = _layer(module)
        if layer is None:
            continue  # the front may import anything
        for target in _imports(path):
            if not _allowed(target, ALLOWED[layer]):
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_the_runtime_never_imports_openai_or_subprocess() -> None:
    for path in (PACKAGE / "runtime").rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not names & {"openai", "subprocess"}, path
