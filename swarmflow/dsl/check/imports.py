"""How `use NAME from module` finds its module: on the import path first, then as a `.py`
file next to the flow. `check` and the run import through these same functions, so a module
that checks is the module that runs."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from pydantic import BaseModel


def sibling(module: str, base_dir: str | Path | None) -> Path | None:
    """The file `module` names next to the flow (`a.b` is `a/b.py`), if it exists."""
    if base_dir is None:
        return None
    path = Path(base_dir, *module.split(".")).with_suffix(".py")
    return path if path.is_file() else None


def load_module(module: str, base_dir: str | Path | None) -> ModuleType:
    """The module `use` names, imported (once per name, as an import would)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        path = sibling(module, base_dir)
        if exc.name != module.split(".", maxsplit=1)[0] or path is None:
            raise
    if module in sys.modules:
        return sys.modules[module]
    spec = importlib.util.spec_from_file_location(module, path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded  # as an import would: one module object per name
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[module]
        raise
    return loaded


def is_missing(exc: ModuleNotFoundError, module: str) -> bool:
    """Whether `exc` says `module` itself (or a package above it) is nowhere to be found, not
    a module it imports in turn."""
    return exc.name is not None and (module == exc.name or module.startswith(exc.name + "."))


def failed(module: str, exc: Exception) -> str:
    """What went wrong while `module` ran its own code, in one line."""
    reason = str(exc).strip().splitlines()
    return f"importing '{module}' failed: {type(exc).__name__}" + (
        f": {reason[0]}" if reason else ""
    )


def import_name(module: str, name: str, base_dir: str | Path | None) -> object:
    """`name` from `module`; ImportError with a message for people if there is none."""
    try:
        loaded = load_module(module, base_dir)
    except ModuleNotFoundError as exc:
        raise ImportError(f"cannot import module '{module}': {exc}") from None
    except Exception as exc:  # the module itself failed while loading; say how
        raise ImportError(failed(module, exc)) from None
    try:
        return getattr(loaded, name)
    except AttributeError:
        raise ImportError(f"module '{module}' has no '{name}'") from None


def not_model(name: str, value: object) -> str:
    """Why the import `name` cannot be an answer's model; "" if it can."""
    if isinstance(value, type) and issubclass(value, BaseModel):
        return ""
    why = "it cannot validate an answer; import a BaseModel subclass"
    return f"'{name}' is not a pydantic model, so {why}"
