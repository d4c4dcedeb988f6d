"""What the checker knows about a value without running the flow.

A `Value` has a coarse type, the agents it came from (its static provenance, for the handoff
rule), and, for numbers, an upper bound when one is known (for the budget check).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


class T:
    """Coarse types: enough to catch operator misuse, not a type system."""

    NUMBER, STRING, BOOL, NONE = "number", "string", "bool", "none"
    LIST, OUTCOMES = "list", "outcomes"
    OUTPUT, SNAPSHOT, MODEL = "output", "snapshot", "model"
    CALLABLE, AGENT, UNKNOWN = "callable", "agent", "unknown"


NOT_SEQUENCES = frozenset({T.NUMBER, T.BOOL, T.NONE, T.OUTPUT, T.SNAPSHOT, T.STRING})

DESCRIPTIONS = {
    T.NUMBER: "a number",
    T.STRING: "a string",
    T.BOOL: "true or false",
    T.NONE: "none",
    T.LIST: "a list",
    T.OUTCOMES: "a list of outcomes",
    T.OUTPUT: "an agent's output",
    T.SNAPSHOT: "a budget snapshot",
    T.MODEL: "a structured answer",
    T.CALLABLE: "a Python callable",
    T.AGENT: "an agent",
    T.UNKNOWN: "a value",
}

SNAPSHOT_FIELDS = {
    "tokens": "tokens",
    "cost": "cost",
    "calls": "calls",
    "seconds": "time",
    "spent_tokens": "",
    "spent_cost": "",
    "spent_calls": "",
}
OUTPUT_FIELDS = {
    "text": T.STRING,
    "value": T.UNKNOWN,
    "patch": T.UNKNOWN,
    "agent": T.STRING,
    "session": T.STRING,
    "state": T.STRING,
    "reason": T.STRING,
    "ok": T.BOOL,
    "detail": T.STRING,
    "usage": T.UNKNOWN,
}
OUTPUT_CONTENT = frozenset({"text", "value", "patch", "detail"})
"""Fields of an agent output that carry what the agent wrote (and so its provenance)."""


@dataclass(frozen=True, slots=True)
class Value:
    """A value as the checker sees it."""

    type: str = T.UNKNOWN
    sources: frozenset[str] = frozenset()
    bound: float | None = None
    exact: bool = False
    item: Value | None = None
    length: int | None = None
    """For a list written out in place: how many items it has."""

    def describe(self) -> str:
        return DESCRIPTIONS.get(self.type, "a value")

    def with_sources(self, sources: frozenset[str]) -> Value:
        return replace(self, sources=self.sources | sources)

    def element(self) -> Value:
        """What one item of this sequence is (its provenance included)."""
        base = self.item or Value()
        return base.with_sources(self.sources)


def number(bound: float | None = None, exact: bool = False) -> Value:
    return Value(T.NUMBER, bound=bound, exact=exact)


def merge(a: Value, b: Value) -> Value:
    """The value of a name after an `if`: either branch's value."""
    same = a.type == b.type
    bound = max(a.bound, b.bound) if a.bound is not None and b.bound is not None else None
    return Value(
        a.type if same else T.UNKNOWN,
        a.sources | b.sources,
        bound,
        same and a.exact and b.exact and a.bound == b.bound,
        a.item if same else None,
        a.length if a.length == b.length else None,
    )


def sources_of(*values: Value) -> frozenset[str]:
    found: frozenset[str] = frozenset()
    for v in values:
        found |= v.sources
    return found
