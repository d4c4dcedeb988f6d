"""Provenance: the set of agents a value came from, followed through containers.

A value carries provenance when it (or something inside it) exposes
`__swarmflow_provenance__`, or when the run registered it as an agent's product (structured
outputs are plain pydantic models, so the run keeps an identity map for them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any

from pydantic import BaseModel

from swarmflow.core.output import SourcedStr

Lookup = Callable[[object], frozenset[str]]
_MAX_DEPTH = 12
_ATOMS = (str, bytes, int, float, bool, type(None))


def _no_lookup(value: object) -> frozenset[str]:
    return frozenset()


def collect(value: object, lookup: Lookup = _no_lookup) -> frozenset[str]:
    """Every agent that declared a part in `value`, searching containers and models.

    A tagged value (an agent's output, or a product the run registered) speaks for its whole
    content: an agent may relay what it was given. Plain text inside untagged values is the
    fingerprints' part of the check (`core.fingerprint`).
    """
    walk = _Walk(lookup)
    walk.visit(value, 0)
    return frozenset(walk.found)


class _Walk:
    """One traversal: what it found, and which objects it has seen (cycles end there)."""

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup
        self.found: set[str] = set()
        self.seen: set[int] = set()

    def visit(self, value: object, depth: int) -> None:
        _walk(self, value, depth)


def _walk(walk: _Walk, value: Any, depth: int) -> None:
    kind = type(value)
    if kind is str:
        return
    if depth > _MAX_DEPTH or (kind in _ATOMS and kind is not SourcedStr) or id(value) in walk.seen:
        return
    walk.seen.add(id(value))
    own = getattr(value, "__swarmflow_provenance__", None) or walk.lookup(value)
    if own:
        walk.found.update(own)
        return
    for child in _children(value):
        _walk(walk, child, depth + 1)


def _children(value: object) -> list[object]:
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


def source_strings(value: object, sources: frozenset[str], depth: int = 0) -> None:
    """Make every string inside an agent's structured value a `SourcedStr`, in place.

    A structured answer is a pydantic model the flow reads field by field: `f"{pick.reason}"`
    renders a field, not the model, so the field itself must carry the agent for the render
    hooks (`core.renders`) to see it. Models (frozen ones too), lists and dict values are
    updated where they are; tuples and sets, which cannot be, keep plain strings (the
    fingerprints still cover them).
    """
    if depth > _MAX_DEPTH or not sources:
        return
    if isinstance(value, BaseModel):
        slots: Any = [(name, getattr(value, name, None)) for name in type(value).model_fields]
        put: Callable[[Any, Any], None] = functools.partial(object.__setattr__, value)
    elif isinstance(value, list):
        slots, put = list(enumerate(value)), value.__setitem__
    elif isinstance(value, dict):
        slots, put = list(value.items()), value.__setitem__
    else:
        return
    for place, item in slots:
        if type(item) is str:
            put(place, SourcedStr(item, sources))
        else:
            source_strings(item, sources, depth + 1)
