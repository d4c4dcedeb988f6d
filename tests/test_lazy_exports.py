"""`import swarmflow` imports no module it does not need; each public name loads on first use.

The packages that export their names lazily (`swarmflow.core.lazy`) list each name twice: in
an `if TYPE_CHECKING:` import, for type checkers, and in `export_lazily`, for the runtime.
The checks here keep the two in step and the names what they were when imported eagerly.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import swarmflow
from swarmflow.core.lazy import LazyPackage

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


def _type_checking_imports(package: str) -> dict[str, str]:
    """Name -> module, from the `if TYPE_CHECKING:` block of the package's `__init__.py`."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(str(module.__file__)).read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                found.update({alias.name: stmt.module for alias in stmt.names})
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
        "or m.startswith(('swarmflow.runner', 'swarmflow.runtime', 'swarmflow.run_dirs', "
        "'swarmflow.operators', 'swarmflow.flows'))))"
    )
    assert loaded == ""
