"""`--input KEY=VALUE` as the flow's typed inputs, for a `.swarm` flow and a Python flow alike.

The text becomes what the input's declared type asks for: `n=3` for `n: int` is 3, `ok=yes`
for a `bool` True, and a structured type (`list[str]`, a pydantic model) is read as JSON. An
input whose type is text, undeclared, or a `.swarm` type the flow converts itself, stays text.
"""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import PydanticUserError, TypeAdapter, ValidationError

if TYPE_CHECKING:
    from swarmflow.runtime.flow import Flow

_NAMED = {"int": int, "float": float, "bool": bool, "str": str}
"""A `.swarm` flow's declared types, by the names its signature carries."""
_TEXT = (str, Any, inspect.Parameter.empty)


def typed_inputs(flow: Flow[..., object], given: dict[str, str]) -> dict[str, Any]:
    """Each given input converted to its declared type.

    Raises:
        ValueError: the flow has no such input, or the text is not of the input's type.
    """
    params = flow.signature.parameters
    unknown = sorted(set(given) - set(params))
    if unknown:
        raise ValueError(
            f"flow {flow.name} has no input {', '.join(unknown)}; its inputs: "
            f"{', '.join(params) or 'none'}"
        )
    hints = _hints(flow.fn)
    return {
        name: _converted(name, hints.get(name, params[name].annotation), text)
        for name, text in given.items()
    }


def _hints(fn: Callable[..., object]) -> dict[str, Any]:
    """The flow function's annotations resolved (`from __future__ import annotations` too)."""
    try:
        return typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: its text is kept as written
        return {}


def _converted(name: str, kind: Any, text: str) -> Any:
    kind = _NAMED.get(kind, kind) if isinstance(kind, str) else kind
    if isinstance(kind, str) or any(kind is t for t in _TEXT):
        return text  # text, or a `.swarm` type the flow's own steps convert
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(kind)
    except (PydanticUserError, TypeError):  # no schema for it: the flow gets the text
        return text
    with contextlib.suppress(ValidationError):  # as typed first ("3", "yes"), then as JSON
        return adapter.validate_python(text.strip() if kind in (int, float, bool) else text)
    try:
        return adapter.validate_json(text)
    except ValidationError:
        shown = getattr(kind, "__name__", None) or str(kind)
        raise ValueError(f"input '{name}' is {shown}: {text!r} is not one") from None
