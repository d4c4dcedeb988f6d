"""Naming a flow on the command line: a `.swarm` file, `module:flow` or `file.py:flow`."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

from swarmflow.core.errors import ConfigError


def load_flow_named(reference: str) -> Any:
    """The flow `reference` names: a `.swarm` file, `module:flow` or `file.py:flow`.

    Raises:
        ConfigError: it cannot be read or imported, or the name is not a @flow.
    """
    from swarmflow.runtime.flow import Flow

    if reference.endswith(".swarm"):
        from swarmflow.dsl import DslError, load_flow

        try:
            return load_flow(reference)
        except DslError as exc:
            raise ConfigError(str(exc)) from None
        except OSError as exc:
            raise ConfigError(f"cannot read {reference}: {exc}") from None
    where, sep, name = reference.rpartition(":")
    if not sep or not where or not name:
        raise ConfigError(f"FLOW {reference!r}: give a .swarm file, module:flow or file.py:flow")
    found = getattr(_module(where), name, None)
    if found is None:
        raise ConfigError(f"{reference}: {where} defines no {name!r}")
    if not isinstance(found, Flow):
        raise ConfigError(f"{reference} is not a @flow (found {type(found).__name__})")
    return found


def _module(where: str) -> Any:
    try:
        if where.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(where).stem, where)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {where}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(where)
    except (ImportError, OSError) as exc:
        raise ConfigError(f"cannot import the flow from {where}: {exc}") from None
