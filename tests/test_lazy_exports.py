"""`import swarmflow` imports no module it does not need; each public name loads on first use.

The packages that export their names lazily (`swarmflow.core.lazy`) say each name once: as a
`from module import Name as Name` in their `if TYPE_CHECKING:` block, which type checkers read
as a re-export, and from which `export_lazily` takes, at run time, the module of each name and
the package's `__all__`. The checks here read that block on their own, keep what the runtime
sees the same, and keep the names what they were when imported eagerly.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import swarmflow
from swarmflow.core.lazy import LazyPackage, all_order, type_checking_exports

PACKAGE = Path(swarmflow.__file__).parent
LAZY = sorted(
    ".".join(("swarmflow", *p.parent.relative_to(PACKAGE).parts))
    for p in PACKAGE.rglob("__init__.py")
    if "export_lazily(" in p.read_text()
)


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _source(package: str) -> ast.Module:
    return ast.parse((PACKAGE.parent / package.replace(".", "/") / "__init__.py").read_text())


def _type_checking_imports(package: str) -> dict[str, str]:
    """Name -> module, from the `if TYPE_CHECKING:` block of the package's `__init__.py`,
    each a re-export that type checkers see (`from module import Name as Name`)."""
    found: dict[str, str] = {}
    for node in _source(package).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{package}: {alias.name} is not re-exported"
                    assert alias.name not in found, f"{package}: {alias.name} twice"
                    found[alias.name] = stmt.module
    return found


def test_the_lazy_packages_are_found() -> None:
    assert "swarmflow" in LAZY
    assert "swarmflow.operators" in LAZY


@pytest.mark.parametrize("package", LAZY)
def test_type_checkers_and_the_runtime_see_the_same_names(package: str) -> None:
    module = importlib.import_module(package)
    assert isinstance(module, LazyPackage)
    assert _type_checking_imports(package) == module.__dict__["_exports"]
    assert set(module.__dict__["_exports"]) == set(module.__all__)
    assert module.__all__ == sorted(module.__all__, key=all_order)


@pytest.mark.parametrize("package", LAZY)
def test_each_public_name_is_said_once(package: str) -> None:
    """Only the `if TYPE_CHECKING:` block names them: no `__all__`, no map beside it."""
    tree = _source(package)
    assigned = {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    assert "__all__" not in assigned
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "export_lazily"
    ]
    assert [ast.unparse(c) for c in calls] == ["export_lazily(__name__)"]


def test_all_is_sorted_as_ruff_sorts_it() -> None:
    """Constants, then classes, then the rest, each in natural order (ruff's RUF022)."""
    names = ["f10", "Flow", "DEMO_TASK", "f2", "TEAM", "T", "FixResult", "batch", "_x"]
    assert sorted(names, key=all_order) == [
        "DEMO_TASK",
        "TEAM",
        "FixResult",
        "Flow",
        "T",
        "_x",
        "batch",
        "f2",
        "f10",
    ]


@pytest.mark.parametrize(
    ("block", "why"),
    [
        ("from a.b import C\n", "write `C as C`"),
        ("from a.b import C as D\n", "write `C as C`"),
        ("import a.b\n", "write `from module import Name as Name`"),
        ("from a.b import C as C\n    from a.c import C as C\n", "'C' is exported twice"),
    ],
)
def test_a_block_that_does_not_say_each_name_once_is_refused(
    tmp_path: Path, block: str, why: str
) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(f"from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    {block}")
    with pytest.raises(ImportError, match=why):
        type_checking_exports(str(init))
    init.write_text("x = 1\n")
    with pytest.raises(ImportError, match="no `if TYPE_CHECKING:` block"):
        type_checking_exports(str(init))


@pytest.mark.parametrize("package", LAZY)
def test_every_exported_name_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    for name, where in _type_checking_imports(package).items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name), name
        assert name in dir(module)


def test_a_name_that_is_not_exported_is_a_clear_error() -> None:
    with pytest.raises(AttributeError, match="module 'swarmflow' has no attribute 'nope'"):
        swarmflow.nope  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError, match="nope"):
        exec("from swarmflow import nope", {})


def test_import_swarmflow_loads_none_of_the_runtime() -> None:
    loaded = _python(
        "import sys, swarmflow; "
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'anyio', 'structlog', 'openai', 'networkx', 'jinja2', 'lark') "
        "or m.startswith('swarmflow.run')))"
    )
    assert loaded == ""


def test_star_import_gives_every_public_name() -> None:
    names = _python("from swarmflow import *; print(sorted(k for k in dir() if k[0] != '_'))")
    assert names == str(sorted(swarmflow.__all__))


def test_a_function_keeps_its_name_when_its_module_is_imported_first() -> None:
    """`swarmflow.stream` is a function and a module; an operator likewise. Importing the
    module first must not turn the package's name into the module."""
    out = _python(
        "from swarmflow.stream import stream, RunStream\n"
        "from swarmflow.operators.parallel import parallel\n"
        "import sys, swarmflow, swarmflow.operators, swarmflow.stream\n"
        "print(swarmflow.stream is stream, swarmflow.operators.parallel is parallel,"
        " swarmflow.parallel is parallel, sys.modules['swarmflow.stream'].RunStream is RunStream)"
    )
    assert out == "True True True True"


def test_the_command_line_parser_loads_none_of_the_runtime() -> None:
    """`swarmflow --help` (and every command's parsing) starts without a run's machinery; a
    command imports what it runs when it runs."""
    loaded = _python(
        "import sys; from swarmflow.cli import build_parser; build_parser(); "
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'anyio', 'structlog', 'lark', 'jinja2') "
        "or m.startswith(('swarmflow.runner.lifecycle', 'swarmflow.runtime', 'swarmflow.durable', "
        "'swarmflow.operators', 'swarmflow.flows'))))"
    )
    assert loaded == ""
