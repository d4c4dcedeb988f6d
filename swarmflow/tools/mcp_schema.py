"""An MCP tool's input schema: what makes it unusable, and the argument model it gives.

A server's schema is checked by a recursive validator (`jsonschema`) and walked recursively
when it is sent to the model. Two kinds of schema would make either of them recurse without
end, or past Python's stack, and end the run with a RecursionError:

- one nested deeper than `MAX_SCHEMA_DEPTH` containers;
- one whose `$ref`s lead back to where they started without descending into the arguments
  (`{"$ref": "#"}`, `a -> b -> a` through `$ref`, `allOf`, `anyOf`, `oneOf`, `not`,
  `if`/`then`/`else`, `dependentSchemas`): validating any value never ends.

A recursive schema that descends (a tree whose `children` items refer to the node) is fine:
each step consumes a level of the arguments. Only local references (`#...`, and `$id`s of the
same document) are followed; others are left to the validator, which fetches nothing.

Such a tool, or one whose schema is not valid JSON Schema, is unusable: it is offered with an
empty schema and a description saying why, and each call is a `ToolServerError` naming the
tool and the reason. The server's other tools work, and the run goes on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

MAX_SCHEMA_DEPTH = 64
"""Containers (objects and lists) a tool's input schema may nest."""

Schema = dict[str, object]
"""A JSON Schema object (its values are whatever JSON the server sent)."""


class SchemaError(Protocol):
    """One problem `jsonschema` found: where in the arguments, and what."""

    @property
    def path(self) -> Iterable[str | int]: ...

    @property
    def message(self) -> str: ...


class SchemaValidator(Protocol):
    """A `jsonschema` validator, as the argument check uses it."""

    def iter_errors(self, instance: object) -> Iterable[SchemaError]: ...


# Keywords whose subschemas apply to the same value as the schema holding them.
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_LIST = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_MAP = ("dependentSchemas", "dependencies")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose values are subschemas (walked for `$id` and `$anchor`).
_SUB_ONE = (
    *_SAME_VALUE_ONE,
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SUB_LIST = (*_SAME_VALUE_LIST, "prefixItems", "items")
_SUB_MAP = (*_SAME_VALUE_MAP, "properties", "patternProperties", "$defs", "definitions")


def schema_problem(schema: object) -> str | None:
    """Why `schema` cannot be used as a tool's input schema, or None when it can."""
    depth = nesting_depth(schema, MAX_SCHEMA_DEPTH)
    if depth > MAX_SCHEMA_DEPTH:
        return f"its input schema nests more than {MAX_SCHEMA_DEPTH} levels deep"
    cycle = _Refs(schema).cycle()
    if cycle:
        return (
            "its input schema refers to itself without end ("
            + " -> ".join(cycle)
            + "), so no arguments could ever be checked"
        )
    return None


def nesting_depth(value: object, limit: int) -> int:
    """How deeply `value` nests dicts and lists, counted up to `limit + 1`."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return deepest


class _Refs:
    """The schema's subschemas by where they are, and the references between them."""

    def __init__(self, root: object) -> None:
        self.root = root
        self.ids: dict[str, Schema] = {}
        self.anchors: dict[str, Schema] = {}
        self.schemas: list[tuple[Schema, str, object]] = []  # (schema, pointer, its resource)
        self._walk()

    def _walk(self) -> None:
        stack: list[tuple[object, str, object]] = [(self.root, "#", self.root)]
        while stack:
            node, where, resource = stack.pop()
            if not isinstance(node, dict):
                continue
            own_id = node.get("$id")
            if isinstance(own_id, str) and not own_id.startswith("#"):
                self.ids[own_id.rstrip("#")] = node
                resource = node
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    self.anchors[node[key]] = node
            if isinstance(own_id, str) and own_id.startswith("#"):
                self.anchors[own_id[1:]] = node  # draft 7 and older name anchors with $id
            self.schemas.append((node, where, resource))
            stack.extend((sub, f"{where}/{key}", resource) for key, sub in _subschemas(node))

    def cycle(self) -> list[str] | None:
        """The pointers of one same-value reference cycle, or None when there is none."""
        state: dict[int, str] = {}
        for start, where, resource in self.schemas:
            if id(start) in state:
                continue
            path: list[tuple[object, str, Iterator[tuple[object, str, object]]]] = [
                (start, where, self._edges(start, where, resource))
            ]
            state[id(start)] = "open"
            while path:
                node, _, edges = path[-1]
                step = next(edges, None)
                if step is None:
                    state[id(node)] = "done"
                    path.pop()
                    continue
                target, target_where, target_resource = step
                mark = state.get(id(target))
                if mark == "open":
                    opened = next(i for i, item in enumerate(path) if item[0] is target)
                    return [item[1] for item in path[opened:]] + [target_where]
                if mark is None:
                    state[id(target)] = "open"
                    edges_out = self._edges(target, target_where, target_resource)
                    path.append((target, target_where, edges_out))
        return None

    def _edges(
        self, node: object, where: str, resource: object
    ) -> Iterator[tuple[object, str, object]]:
        """The schemas that apply to the same value as `node`: where they are, their resource."""
        if not isinstance(node, dict):
            return
        for key in _REFS:
            ref = node.get(key)
            if isinstance(ref, str):
                found = self._resolve(ref, resource)
                if found is not None:
                    yield found[0], ref, found[1]
        for key, sub in _subschemas(node, same_value=True):
            yield sub, f"{where}/{key}", resource

    def _resolve(self, ref: str, resource: object) -> tuple[object, object] | None:
        """The local schema `ref` names (and the resource it is in), or None."""
        base, _, fragment = ref.partition("#")
        if base:
            resource = self.ids.get(base)
            if resource is None:
                return None  # not in this document: the validator's business
        if not fragment:
            return resource, resource
        if not fragment.startswith("/"):
            anchored = self.anchors.get(unquote(fragment))
            return (anchored, resource) if anchored is not None else None
        node = resource
        for part in fragment[1:].split("/"):
            name = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and name in node:
                node = node[name]
            elif isinstance(node, list) and name.isdigit() and int(name) < len(node):
                node = node[int(name)]
            else:
                return None
        return node, resource


def _subschemas(node: Schema, *, same_value: bool = False) -> Iterator[tuple[str, object]]:
    """`node`'s subschemas (with their keyword path): all, or those for the same value."""
    ones, lists, maps = (
        (_SAME_VALUE_ONE, _SAME_VALUE_LIST, _SAME_VALUE_MAP)
        if same_value
        else (_SUB_ONE, _SUB_LIST, _SUB_MAP)
    )
    for key in ones:
        if isinstance(one := node.get(key), dict):
            yield key, one
    for key in lists:
        if isinstance(listed := node.get(key), list):
            yield from ((f"{key}/{i}", sub) for i, sub in enumerate(listed))
    for key in maps:
        if isinstance(named := node.get(key), dict):
            subs = named.items()
            yield from ((f"{key}/{name}", sub) for name, sub in subs if isinstance(sub, dict))


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_EMPTY: Schema = {"type": "object", "properties": {}}


def checked_schema(schema: Mapping[str, object]) -> str | SchemaValidator:
    """A validator for `schema`, or a string saying why the schema cannot be used."""
    import jsonschema
    import referencing

    problem = schema_problem(schema)
    if problem is not None:
        return problem
    validator_cls = jsonschema.validators.validator_for(schema)
    try:
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {exc.message}"
    except RecursionError:
        return "its input schema is too deeply recursive to check"
    # An empty registry: a `$ref` to a URL is never fetched.
    validator: SchemaValidator = validator_cls(schema, registry=referencing.Registry())
    return validator


def args_model(
    tool: str, schema: Mapping[str, object], validator: SchemaValidator
) -> type[BaseModel]:
    """An argument model whose schema is the server's and whose validation is the schema's."""
    frozen = dict(schema)

    class McpArgs(BaseModel):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _against_schema(cls, data: object) -> object:
            problems = schema_errors(validator, data)
            if problems:
                raise PydanticCustomError("json_schema", "{problems}", {"problems": problems})
            return data

        @classmethod
        def model_json_schema(cls, *args: object, **kwargs: object) -> Schema:
            return dict(frozen)

    McpArgs.__name__ = McpArgs.__qualname__ = f"{_UNSAFE.sub('_', tool)}_args"
    return McpArgs


def schema_errors(validator: SchemaValidator, data: object) -> str:
    """What is wrong with `data` by the schema ("" when nothing is); a schema that breaks the
    validator (a reference it cannot resolve, recursion past the stack) is reported, not raised."""
    try:
        errors = list(validator.iter_errors(data))
    except RecursionError:
        return "the arguments could not be checked: the input schema recurses too deeply"
    except Exception as exc:  # the server's schema broke the validator: one failed call
        return f"the arguments could not be checked against the input schema: {exc}"
    errors.sort(key=lambda err: [str(part) for part in err.path])
    return "; ".join(
        f"{'/'.join(str(p) for p in err.path) or '(arguments)'}: {err.message}" for err in errors
    )


def unusable_args(tool: str) -> type[BaseModel]:
    """The argument model of an unusable tool: an empty schema, anything accepted."""

    class UnusableArgs(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: object, **kwargs: object) -> Schema:
            return dict(_EMPTY, properties={})

    UnusableArgs.__name__ = UnusableArgs.__qualname__ = f"{_UNSAFE.sub('_', tool)}_args"
    return UnusableArgs
