"""The attributes of a flow's own pydantic models, as `check` sees them.

A step reads `answer.field` with `getattr` on the model instance (dsl/compile/run.py), so what
works at run time is a field, or anything the class itself has: a method, a property, a computed
field, a class variable, a private attribute. A model that takes extra fields, or answers any
name through its own `__getattr__`, has no attribute check can rule out.
"""

from __future__ import annotations

import types
import typing
from collections import abc
from typing import Annotated, Literal, TypeGuard

from pydantic import BaseModel

from swarmflow.dsl.check.context import T, Value, number

_SEQUENCES = (list, tuple, set, frozenset, abc.Sequence)
"""What pydantic validates into a sequence (compared with `in` on a tuple: by identity, since
an annotation need not be hashable)."""


def is_model(value: object) -> TypeGuard[type[BaseModel]]:
    """Whether `value` is a pydantic model class."""
    return isinstance(value, type) and issubclass(value, BaseModel)


def is_open(model: type[BaseModel]) -> bool:
    """Whether any name may work on an instance: extra fields allowed, a `__getattr__` of the
    model's own, or a mapping (a step reads a mapping's keys as attributes)."""
    extra = model.model_config.get("extra") == "allow"
    own_getattr = any("__getattr__" in vars(c) for c in model.__mro__ if c is not BaseModel)
    return extra or own_getattr or issubclass(model, abc.Mapping)


def has_attribute(model: type[BaseModel], name: str) -> bool:
    """Whether `instance.name` works at run time (a field, or anything the class has)."""
    return name in model.model_fields or hasattr(model, name) or is_open(model)


def field_names(model: type[BaseModel]) -> list[str]:
    """The fields and computed fields, in declaration order: what a message lists."""
    return [*model.model_fields, *model.model_computed_fields]


def suggestions(model: type[BaseModel]) -> set[str]:
    """Names a misspelling may have meant: the fields, and the class's public attributes."""
    return {*field_names(model), *(n for n in dir(model) if not n.startswith("_"))}


def attribute_value(model: type[BaseModel], name: str, sources: frozenset[str]) -> Value:
    """The value `instance.name` gives (its provenance that of the instance)."""
    found = model.model_fields.get(name)
    value = annotation_value(found.annotation) if found is not None else Value()
    return Value(value.type, sources, item=value.item, model=value.model)


def annotation_value(annotation: object) -> Value:
    """The value a field of this annotation holds: a nested model, a list (with what one item
    is), text, a number or true/false; anything else is a value of no known kind."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return annotation_value(args[0])
    if origin in (typing.Union, types.UnionType):
        present = [a for a in args if a is not type(None)]  # `X | None`: a step tests it first
        return annotation_value(present[0]) if len(present) == 1 else Value()
    if is_model(annotation):
        return Value(T.MODEL, model=annotation)
    if annotation is str or annotation is bool:
        return Value(T.STRING if annotation is str else T.BOOL)
    if annotation is int or annotation is float:
        return number()
    if origin is Literal and all(isinstance(a, str) for a in args):
        return Value(T.STRING)
    if (origin or annotation) in _SEQUENCES:
        item = args[0] if args and (origin is not tuple or args[1:] in ((), (...,))) else object
        return Value(T.LIST, item=annotation_value(item))
    return Value()
