"""Provenance: the set of agents a value came from, followed through containers.

A value carries provenance when it (or something inside it) exposes
`__swarmflow_provenance__`, or when the run registered it as an agent's product (structured
outputs are plain pydantic models, so the run keeps an identity map for them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any

from pydantic import BaseModel

from swarmflow.core.output import SourcedStr

Lookup = Callable[[Any], frozenset[str]]
_MAX_DEPTH = 12
_ATOMS = (str, bytes, int, float, bool, type(None))


def _no_lookup(value: Any) -> frozenset[str]:
    return frozenset()


def collect(value: Any, lookup: Lookup = _no_lookup) -> frozenset[str]:
    """Every agent that contributed to `value`, searching containers and models."""
    found: set[str] = set()
    _walk(value, lookup, found, set(), 0)
    return frozenset(found)


def _walk(value: Any, lookup: Lookup, found: set[str], seen: set[int], depth: int) -> None:
    # Atoms carry nothing, except a str subclass (an agent's text) with its attribute.
    if depth > _MAX_DEPTH or (type(value) in _ATOMS and type(value) is not SourcedStr):
        return
    if id(value) in seen:
        return
    seen.add(id(value))
    own = getattr(value, "__swarmflow_provenance__", None)
    if own:
        found.update(own)
    found.update(lookup(value))
    for child in _children(value):
        _walk(child, lookup, found, seen, depth + 1)


def _children(value: Any) -> list[Any]:
    if isinstance(value, str):
        return []
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    if isinstance(value, BaseModel):
        return [getattr(value, name) for name in type(value).model_fields]
    if is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name, None) for f in fields(value)]
    return []
