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

import importlib
import sys
from itertools import groupby
from types import ModuleType


class LazyPackage(ModuleType):
    """A package module whose exported names are imported when first read.

    Its exported names also outrank its submodules of the same name: `swarmflow.stream` is
    both a function and the module that defines it (and each operator in
    `swarmflow.operators` likewise). Importing such a module would bind the package's
    attribute to the module; that binding is refused, so the name stays what the package
    exports whichever is imported first. The module itself is in `sys.modules` as usual.
    """

    def __getattr__(self, name: str) -> object:
        # Called only for names not yet in the module's namespace.
        module = self.__dict__.get("_exports", {}).get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        self.__dict__[name] = value  # later reads are plain attribute reads
        return value

    def __setattr__(self, name: str, value: object) -> None:
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
    """Name -> module, from the `if TYPE_CHECKING:` block of the package file at `path`.

    The block is read line by line, not parsed: a package file is ours, every line of its
    block is one `from module import Name as Name`, and reading it so costs microseconds
    where building its syntax tree cost over a millisecond of every `import swarmflow`
    (tests/test_lazy_exports.py holds the two readings equal for every package).
    """
    with open(path, "rb") as file:
        lines = file.read().decode("utf-8").splitlines()
    starts = ("if TYPE_CHECKING:", "if typing.TYPE_CHECKING:")
    first = next((i for i, line in enumerate(lines) if line.startswith(starts)), None)
    if first is None:
        raise ImportError(f"{path}: no `if TYPE_CHECKING:` block of exported names")
    exports: dict[str, str] = {}
    for number, line in enumerate(lines[first + 1 :], first + 2):
        words = line.split()
        if not words or words[0][0] == "#":
            continue
        if not line[0].isspace():
            break  # the block has ended
        if _is_export(words) and words[3] not in exports:
            exports[words[3]] = words[1]
        else:
            _refuse(words, f"{path}:{number}")
    return exports


def _is_export(words: list[str]) -> bool:
    """`from module import Name as Name`, split at its spaces."""
    return (
        len(words) == 6
        and (words[0], words[2], words[4]) == ("from", "import", "as")
        and words[3] == words[5]
    )


def _refuse(words: list[str], where: str) -> None:
    """Why a line of the block is not one `from module import Name as Name`."""
    if len(words) < 4 or words[0] != "from" or words[2] != "import":
        raise ImportError(f"{where}: write `from module import Name as Name`")
    name = words[3]
    if words[4:] != ["as", name]:
        raise ImportError(
            f"{where}: write `{name} as {name}`, so that type checkers see it re-exported"
        )
    raise ImportError(f"{where}: {name!r} is exported twice")


def all_order(name: str) -> tuple[int, list[int | str]]:
    """How ruff sorts an `__all__` (RUF022): constants, then classes, then the rest.

    Within each group, a natural order: `f2` comes before `f10`. (Split without a regular
    expression: compiling one at import would load `re`'s compiler for every `import
    swarmflow`.)
    """
    group = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    if not any(c.isdigit() for c in name):
        return group, [name]
    parts = ["".join(run) for _, run in groupby(name, str.isdigit)]
    return group, [int(p) if p.isdigit() else p for p in parts]


__all__ = ["LazyPackage", "all_order", "export_lazily", "type_checking_exports"]
