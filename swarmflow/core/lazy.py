"""Public names of a package, imported from their modules on first use (PEP 562's idea).

`import swarmflow` then costs what its package file costs, not every module of the library:
the runtime modules, pydantic and anyio load when a name that needs them is first read. Type
checkers see the names through each package's `if TYPE_CHECKING:` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any


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


def export_lazily(package: str, modules: Mapping[str, tuple[str, ...]]) -> None:
    """Make `package` import each of its names ({module: names}) when it is first read."""
    found = sys.modules[package]
    found.__class__ = LazyPackage
    exports = {name: module for module, names in modules.items() for name in names}
    found.__dict__["_exports"] = exports  # exported name -> the module that defines it


__all__ = ["LazyPackage", "export_lazily"]
