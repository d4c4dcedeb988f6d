"""A faster `__init__` for the frozen, slotted dataclasses made on every model call.

A frozen dataclass's generated `__init__` stores each field through `object.__setattr__`,
looked up afresh for every field; that makes a five-field `Message` cost about 650 ns. The
slot's own descriptor stores the same value without the generic attribute machinery, in
about 60 % of the time. `fast_init` swaps in an `__init__` built that way. Nothing else
changes: the signature, defaults and default factories are the dataclass's own, and assigning
to a field afterwards still raises `FrozenInstanceError` (that goes through `__setattr__`,
which stays as the dataclass made it).
"""

from __future__ import annotations

from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


class _Factory:
    """Stands in for a field with a default factory; the factory runs when it is left out."""

    def __repr__(self) -> str:
        return "<factory>"  # how `inspect.signature` shows it, as for a plain dataclass


_FACTORY = _Factory()


def fast_init(cls: C) -> C:
    """Replace the `__init__` of frozen, slotted dataclass `cls` (use below `@dataclass`)."""
    params = getattr(cls, "__dataclass_params__", None)
    if not is_dataclass(cls) or params is None or not params.frozen:
        raise TypeError(f"fast_init needs a frozen dataclass, got {cls!r}")
    if "__slots__" not in vars(cls) or hasattr(cls, "__post_init__"):
        raise TypeError(f"fast_init needs slots and no __post_init__: {cls.__name__}")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    signature, body = [], []
    for f in fields(cls):
        if not f.init or f.kw_only:
            raise TypeError(f"fast_init supports plain positional fields only: {f.name}")
        namespace[f"_set_{f.name}"] = vars(cls)[f.name].__set__
        if f.default is not MISSING:
            namespace[f"_default_{f.name}"] = f.default
            signature.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            signature.append(f"{f.name}=_FACTORY")
            body.append(f"if {f.name} is _FACTORY: {f.name} = _factory_{f.name}()")
        else:
            signature.append(f.name)
        body.append(f"_set_{f.name}(self, {f.name})")
    source = f"def __init__(self, {', '.join(signature)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, namespace)  # the technique `dataclasses` itself uses to build __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
