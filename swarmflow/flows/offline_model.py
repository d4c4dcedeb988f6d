"""A scripted model for `swarmflow run --demo` of any flow: plausible answers, offline.

Plain turns get a short canned answer; structured asks (`ask ... as Model`, `output:`) get a
JSON object built from the schema in the prompt, so every flow runs to its end.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel

_SCHEMA = re.compile(r"matches this JSON schema:\s*(\{.*\})\s*$", re.DOTALL)
_MAX_DEPTH = 6


def offline_model() -> FunctionModel:
    """The demo model: deterministic, instant, and never calls a network."""
    return FunctionModel(_answer, name="demo")


def _answer(request: ModelRequest) -> str:
    prompt = request.prompt
    found = _SCHEMA.search(prompt)
    if found is not None:
        try:
            schema = json.loads(found.group(1))
        except json.JSONDecodeError:
            schema = {}
        return json.dumps(example(schema, schema))
    first = prompt.strip().splitlines()[0][:80] if prompt.strip() else "the task"
    return f"[demo {request.agent or 'agent'}] Done: {first}"


def example(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> Any:
    """A value that validates against a (pydantic-made) JSON schema."""
    if depth > _MAX_DEPTH:
        return None
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return example(root.get("$defs", {}).get(name, {}), root, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return example(schema[key][0], root, depth + 1)
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    return _by_type(schema, root, depth)


def _by_type(schema: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: example(sub, root, depth + 1) for name, sub in props.items()}
    if kind == "array":
        return [example(schema.get("items", {}), root, depth + 1)]
    if kind in ("number", "integer"):
        return _number(schema, kind)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "demo"


def _number(schema: dict[str, Any], kind: str) -> float | int:
    low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value = 0.9 if high is not None and high <= 1 else max(low, 1)
    if high is not None:
        value = min(value, high)
    return int(value) if kind == "integer" else float(value)
