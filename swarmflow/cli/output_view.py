"""How `swarmflow run` shows a flow's output: readable text, or plain JSON with `--json`.

A flow may return agent outputs, outcomes of `parallel`, pydantic models, or lists and dicts of
them; none of those should reach a person as a Python repr.
"""

from __future__ import annotations

import dataclasses
import json

from pydantic import JsonValue

from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok
from swarmflow.core.output import AgentOutput


def plain(value: object) -> JsonValue:
    """`value` as JSON-ready data: agent outputs by their value (or text), models dumped."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, AgentOutput):
        return plain(value.value) if value.value is not None else value.text
    if isinstance(value, Ok):
        return plain(value.value)
    if isinstance(value, Failed):
        return {"failed": f"{type(value.error).__name__}: {value.error}"}
    if isinstance(value, Cancelled):
        return {"cancelled": value.reason}
    if isinstance(value, Empty):
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def as_text(value: object) -> str:
    """`value` for a person: text as it is, a list one item per line, the rest as JSON."""
    data = plain(value)
    if isinstance(data, list):
        return "\n".join(f"- {_inline(item)}" for item in data) if data else "[]"
    return _inline(data)


def as_json(value: object) -> str:
    """`value` as one JSON document."""
    return json.dumps(plain(value), ensure_ascii=False)


def _inline(data: JsonValue) -> str:
    if isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False)
