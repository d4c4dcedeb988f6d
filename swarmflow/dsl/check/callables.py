"""The one table of what a flow can name: operators, built-in functions, keywords and tools.

The checker, the evaluator and the did-you-mean suggestions all read it, so a name that checks
is a name that runs. Operator options come from the operators' own signatures, tool names from
the tool registry, keywords from the grammar.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal

from swarmflow.operators import budget, compact, human, parallel, pipeline, team

Kind = Literal["operator", "builtin", "keyword", "tool"]


def clamp(x: float, low: float, high: float) -> float:
    """`x`, raised to `low` and lowered to `high`."""
    return min(max(x, low), high)


@dataclass(frozen=True)
class Params:
    """What a built-in function takes: how many values, and of which kind."""

    least: int
    most: int | None
    kind: Literal["number", "sized", "any"]
    usage: str = ""
    """How to call it, when the count alone does not say (`(value, low, high)`)."""

    def wrong_count(self, name: str) -> str:
        """The message for a call with the wrong number of values."""
        if self.usage:
            return f"{name}{self.usage}"
        return f"{name}(...) " + (
            "takes one value" if self.most == 1 else "needs at least one value"
        )


@dataclass(frozen=True)
class Entry:
    """One name a flow can use."""

    name: str
    kind: Kind
    value: Callable[..., object] | None = None
    """What the name is when passed as a value (to a Python callable, say); None: not one."""
    options: tuple[str, ...] = ()
    """The `name: value` options a call takes."""
    example: str = ""
    """A step that checks and runs (the table's own test runs every one)."""
    call: bool = False
    """Written as an ordinary call, `name(...)` (budget, parallel and session have forms
    of their own in the grammar)."""
    params: Params | None = None
    """For a built-in function: the values it takes."""


def _options(fn: Callable[..., object], *supplied: str) -> tuple[str, ...]:
    """Keyword options of an operator, less those the language supplies itself."""
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name not in supplied)


_BUILTIN_FUNCTIONS: dict[str, tuple[Callable[..., object], str, Params]] = {
    "min": (min, "min(3, 4)", Params(1, None, "number")),
    "max": (max, "max([3, 4])", Params(1, None, "number")),
    "clamp": (
        clamp,
        "clamp(7, 1, 4)",
        Params(3, 3, "number", "(value, low, high) takes three numbers"),
    ),
    "len": (len, 'len("four")', Params(1, 1, "sized")),
    "str": (str, "str(4)", Params(1, 1, "any")),
    "int": (int, 'int("4")', Params(1, 1, "any")),
    "float": (float, "float(4)", Params(1, 1, "any")),
    "round": (round, "round(3.6)", Params(1, 1, "any")),
}


@cache
def table() -> dict[str, Entry]:
    """Every name, by name."""
    entries = [
        Entry("budget", "operator", None, _options(budget), "budget()"),
        Entry("parallel", "operator", None, _options(parallel.__call__, "n"), "parallel(2) { 1 }"),
        Entry("compact", "operator", compact, ("keep",), "compact([1, none])", True),
        Entry(
            "pipeline", "operator", pipeline, _options(pipeline), "pipeline([1]) |x| { x }", True
        ),
        Entry("human", "operator", human, _options(human, "channel"), 'human("Go on?")', True),
        Entry("team", "operator", team, _options(team), "team(task, lead: a)", True),
        Entry("session", "operator"),
        *(
            Entry(name, "builtin", fn, (), example, True, params)
            for name, (fn, example, params) in _BUILTIN_FUNCTIONS.items()
        ),
        *(Entry(word, "keyword") for word in keywords()),
        *(Entry(name, "tool") for name in tool_names()),
    ]
    found: dict[str, Entry] = {}
    for entry in entries:
        found.setdefault(entry.name, entry)  # `session` is an operator and a keyword
    return found


@cache  # the table is fixed once built; the planner asks for each step
def names(*kinds: Kind) -> frozenset[str]:
    """The names of the given kinds."""
    return frozenset(e.name for e in table().values() if e.kind in kinds)


@cache
def callable_names() -> frozenset[str]:
    """Names a step calls as `name(...)`: built-in functions, compact, pipeline and human."""
    return frozenset(e.name for e in table().values() if e.call)


def value_of(name: str) -> Callable[..., object] | None:
    """What a built-in name is when passed as a value (None: it is not a built-in)."""
    entry = table().get(name)
    return entry.value if entry else None


def options(name: str) -> tuple[str, ...]:
    """The `name: value` options `name(...)` takes (none for a name not in the table)."""
    entry = table().get(name)
    return entry.options if entry else ()


@cache
def keywords() -> tuple[str, ...]:
    """The reserved words, read from the grammar's terminals."""
    from swarmflow.dsl.syntax.grammar import get_parser

    return tuple(
        sorted(
            str(t.pattern.value)
            for t in get_parser().terminals
            if t.pattern.type == "str" and str(t.pattern.value).isidentifier()
        )
    )


@cache
def tool_names() -> tuple[str, ...]:
    """The tools an agent may list: the built-in registry's."""
    from swarmflow.tools import default_registry

    return tuple(default_registry().names())
