"""Public names of a package, imported from their modules on first use (PEP 562's idea).

`import swarmflow` then costs what its package file costs, not every module of the library:
the runtime modules, pydantic and anyio load when a name that needs them is first read.

A package names each public name once, in an `if TYPE_CHECKING:` block of explicit
re-exports (the form anyio's `__init__` uses), then hands itself over:

    if TYPE_CHECKING:
        from swarmflow.runtime.flow import Flow as Flow
        from swarmflow.runtime.flow import flow as flow

    export_lazily(__name__)

Type checkers read the block as it is written (`as Name` marks a re-export). At run time the
block does not run; `export_lazily` reads the package's own source once, at import, and takes
from the block which module defines each name and the package's `__all__`.
"""

from __future__ import annotations

import _ast
import importlib
import re
import sys
from types import ModuleType
from typing import Any, cast


class LazyPackage(ModuleType):
    """A package module whose exported names are imported when first read.

    Its exported names also outrank its submodules of the same name: `swarmflow.stream` is
    both a function and the module that defines it (and each operator in
    `swarmflow.operators` likewise). Importing such a module would bind the package's
    attribute to the module; that binding is refused, so the name stays what the package
    exports whichever is imported first. The module itself is in `sys.modules` as usual.
    """

    def __getattr__(self, name: str) -> Any:
        # Called only for names not yet in the module's namespace.
        module = self.__dict__.get("_exports", {}).get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        self.__dict__[name] = value  # later reads are plain attribute reads
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and name in self.__dict__.get("_exports", {}):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__dict__.get("_exports", {})})


def export_lazily(package: str) -> None:
    """Make `package` import each name of its `if TYPE_CHECKING:` block when it is first read.

    Also sets the package's `__all__`: those names, sorted as ruff sorts an `__all__`.

    Raises:
        ImportError: the package has no such block, or a statement in it is not a plain
            `from module import Name as Name`.
    """
    found = sys.modules[package]
    exports = type_checking_exports(str(found.__file__))
    found.__class__ = LazyPackage
    found.__dict__["_exports"] = exports  # exported name -> the module that defines it
    found.__dict__["__all__"] = sorted(exports, key=all_order)


def type_checking_exports(path: str) -> dict[str, str]:
    """Name -> module, from the `if TYPE_CHECKING:` block of the package file at `path`."""
    # `_ast` and `open`, not `ast` and `pathlib`: the same tree, without their import time.
    with open(path, "rb") as file:
        tree = cast("_ast.Module", compile(file.read(), path, "exec", _ast.PyCF_ONLY_AST))
    blocks = [node for node in tree.body if isinstance(node, _ast.If) and _is_type_checking(node)]
    if not blocks:
        raise ImportError(f"{path}: no `if TYPE_CHECKING:` block of exported names")
    exports: dict[str, str] = {}
    for stmt in (stmt for block in blocks for stmt in block.body):
        if not (isinstance(stmt, _ast.ImportFrom) and stmt.module and stmt.level == 0):
            raise ImportError(f"{path}:{stmt.lineno}: write `from module import Name as Name`")
        for alias in stmt.names:
            if alias.asname != alias.name:
                raise ImportError(
                    f"{path}:{stmt.lineno}: write `{alias.name} as {alias.name}`, so that "
                    "type checkers see it re-exported"
                )
            if alias.name in exports:
                raise ImportError(f"{path}:{stmt.lineno}: {alias.name!r} is exported twice")
            exports[alias.name] = stmt.module
    return exports


def _is_type_checking(node: _ast.If) -> bool:
    test = node.test
    if isinstance(test, _ast.Attribute):  # `typing.TYPE_CHECKING`
        return test.attr == "TYPE_CHECKING"
    return isinstance(test, _ast.Name) and test.id == "TYPE_CHECKING"


_DIGITS = re.compile(r"(\d+)")


def all_order(name: str) -> tuple[int, list[Any]]:
    """How ruff sorts an `__all__` (RUF022): constants, then classes, then the rest.

    Within each group, a natural order: `f2` comes before `f10`.
    """
    group = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    parts = _DIGITS.split(name)
    return group, [int(p) if i % 2 else p for i, p in enumerate(parts)]


__all__ = ["LazyPackage", "all_order", "export_lazily", "type_checking_exports"]
