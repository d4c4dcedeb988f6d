"""Naming a flow, or a model, on the command line: the one resolver every command uses.

A reference is one of

- `path/to/flow.swarm`: a `.swarm` file;
- `path/to/file.py:NAME`: NAME in that Python file, run as a script would be (its folder goes
  on `sys.path`, so it may import the modules beside it);
- `package.module:NAME`: NAME in that module, imported from `sys.path`, else from the current
  directory (so `flows:fix` works from the folder of `flows.py` without `PYTHONPATH=.`).

Every problem is one `ConfigError` line saying what is wrong and what to give instead; a
`.swarm` file with diagnostics is a `FlowDiagnostics` (a `ConfigError` whose text is the
rendered diagnostics), which `run` and `batch` report with exit status 1 as `check` does.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from swarmflow.core.errors import ConfigError

if TYPE_CHECKING:
    from swarmflow.runtime.flow import Flow

T = TypeVar("T")

REFERENCE_FORMS = "a .swarm file, file.py:NAME or module:NAME"


class FlowDiagnostics(ConfigError):
    """A `.swarm` file that does not check or compile; the text is its rendered diagnostics."""


def add_flow_argument(cmd: argparse.ArgumentParser, dest: str) -> None:
    """The command's FLOW argument, named as every command names a flow."""
    cmd.add_argument(dest, metavar="FLOW", help="a .swarm file, file.py:flow or module:flow")


def python_reference(reference: str) -> tuple[str, str] | None:
    """`(where, name)` when `reference` names something in Python code, else None (a file).

    `where` is a `.py` file or a dotted module name; an existing path (a run directory, a
    `.swarm` file with a colon in its name) is never a Python reference.
    """
    if reference.endswith(".swarm") or _exists(reference):
        return None
    where, sep, name = reference.rpartition(":")
    if not sep or not name.isidentifier():
        return None
    if where.endswith(".py") or (where and all(p.isidentifier() for p in where.split("."))):
        return where, name
    return None


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # a name too long for a path, a NUL byte: no such file
        return False


def load_flow_named(reference: str) -> Flow[..., object]:
    """The flow `reference` names: a `.swarm` file, `file.py:flow` or `module:flow`.

    Raises:
        FlowDiagnostics: a `.swarm` file with problems (the text is its diagnostics).
        ConfigError: it cannot be read or imported, or the name is not a flow.
    """
    if python_reference(reference) is not None or reference.endswith(".py"):
        return load_python_flow(reference)
    if not _exists(reference) or not Path(reference).is_file():
        what = "a folder" if _exists(reference) else "no such file"
        raise ConfigError(f"cannot read {reference}: {what}; give {REFERENCE_FORMS}")
    from swarmflow.dsl import DslError, load_flow

    try:
        return load_flow(reference)
    except DslError as exc:
        raise FlowDiagnostics(str(exc)) from None


def load_python_flow(reference: str) -> Flow[..., object]:
    """The `Flow` that `file.py:flow` or `module:flow` names.

    Raises:
        ConfigError: it cannot be imported, has no such name, or the name is not a flow.
    """
    from swarmflow.runtime.flow import Flow

    found = load_python_object(reference)
    if not isinstance(found, Flow):
        raise ConfigError(f"{reference} is {described(found)}, not a swarmflow Flow (a @flow)")
    return found


def load_python_object(reference: str) -> object:
    """What `file.py:NAME` or `module:NAME` names (a flow, a model, a function that makes one).

    Raises:
        ConfigError: not such a reference, the code cannot be imported, or it has no NAME.
    """
    parts = python_reference(reference)
    if parts is None and reference.endswith(".py"):
        raise ConfigError(
            f"{reference} is a Python file: name what to take from it, as {reference}:NAME"
            + _listed("; it defines the flows", _flows_in(reference))
        )
    if parts is None:
        raise ConfigError(f"{reference!r} is not file.py:NAME or module:NAME")
    where, name = parts
    module = _from_file(where) if where.endswith(".py") else _from_module(where)
    if not hasattr(module, name):
        raise ConfigError(f"{where} defines no {name!r}" + _listed("; its flows:", _flows(module)))
    return getattr(module, name)


def _from_file(where: str) -> ModuleType:
    """The module a `.py` file makes, run as a script would be (its folder on sys.path)."""
    path = Path(where)
    if not path.is_file():
        raise ConfigError(f"cannot read {where}: no such file")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {where}: not a Python source file")
    _importable(path.resolve().parent)
    # Not entered in sys.modules: a file's module is recorded by its path (run.json), and a
    # Ray worker receives its code by value.
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    _run_module(where, lambda: loader.exec_module(module))
    return module


def _from_module(where: str) -> ModuleType:
    """`where` imported from sys.path, else from the current directory."""
    module: ModuleType | None = _run_module(
        where, lambda: importlib.import_module(where), missing_ok=True
    )
    if module is None and _importable(Path.cwd()):
        module = _run_module(where, lambda: importlib.import_module(where), missing_ok=True)
    if module is None:
        raise ConfigError(
            f"cannot import {where}: no module {where!r} on sys.path or in {Path.cwd()}; "
            f"give {REFERENCE_FORMS}"
        )
    return module


def _run_module(where: str, load: Callable[[], T], *, missing_ok: bool = False) -> T | None:
    """`load()`, with whatever the module's own code raises as one line; None when the module
    itself is missing and `missing_ok`."""
    try:
        return load()
    except ModuleNotFoundError as exc:
        if missing_ok and _is_missing(exc, where):
            return None
        raise ConfigError(f"cannot import {where}: {_first_line(exc)}") from None
    except (Exception, SystemExit) as exc:  # the module's own code failed: say how, in a line
        raise ConfigError(f"cannot import {where}: {_first_line(exc)}") from None


def _importable(folder: Path) -> bool:
    """Put `folder` at the end of sys.path (never ahead of an installed package); False when
    it was there already."""
    entries = {Path(p or ".").resolve() for p in sys.path}
    if folder in entries:
        return False
    sys.path.append(str(folder))
    importlib.invalidate_caches()
    return True


def _is_missing(exc: ModuleNotFoundError, module: str) -> bool:
    """Whether `exc` says `module` itself (or a package above it) is missing, not a module it
    imports in turn."""
    return exc.name is not None and (module == exc.name or module.startswith(exc.name + "."))


def _flows_in(path: str) -> list[str]:
    """The flows a `.py` file defines; none when it cannot be imported."""
    try:
        return _flows(_from_file(path))
    except ConfigError:
        return []


def _flows(module: ModuleType) -> list[str]:
    from swarmflow.runtime.flow import Flow

    return sorted(n for n, v in vars(module).items() if isinstance(v, Flow))


def _listed(lead: str, names: list[str]) -> str:
    return f"{lead} {', '.join(names)}" if names else ""


def described(value: object) -> str:
    """`an int`, `a FunctionModel`, `None`: what a reference named, for a message."""
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"


def _first_line(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":  # a declaration's mistake
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{getattr(exc, 'title', 'declaration')}: {where + ': ' if where else ''}" + str(
            first.get("msg", "")
        )
    lines = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {lines[0]}" if lines else "")
