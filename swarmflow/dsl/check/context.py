"""What the checker knows without running the flow: values, scopes of names, the spend tally
for the budget check, and the declarations and diagnostics of one check."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pydantic import BaseModel

from swarmflow.dsl.check.callables import callable_names, names, tool_names
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, Located, Severity, did_you_mean

HUMAN = "human"
OPERATORS = tuple(sorted(names("operator")))
"""The operators, as the language spells them."""
CALLABLE_BUILTINS = callable_names()


class T:
    """Coarse types, each named by how a message describes it: enough to catch operator
    misuse, not a type system."""

    NUMBER, STRING, BOOL, NONE = "a number", "a string", "true or false", "none"
    LIST, OUTCOMES, OUTPUT = "a list", "a list of outcomes", "an agent's output"
    SNAPSHOT, MODEL, CALLABLE = "a budget snapshot", "a structured answer", "a Python callable"
    AGENT, UNKNOWN = "an agent", "a value"


TYPES = frozenset(v for k, v in vars(T).items() if k.isupper())
BUILTIN_TYPES = {"str": T.STRING, "int": T.NUMBER, "float": T.NUMBER, "bool": T.BOOL}
BUILTIN_TYPES.update(list=T.LIST, dict=T.UNKNOWN, any=T.UNKNOWN)
"""The types an input may declare, with the value the steps see."""
NOT_SEQUENCES = frozenset({T.NUMBER, T.BOOL, T.NONE, T.OUTPUT, T.SNAPSHOT, T.STRING})
NOT_NUMBERS = TYPES - {T.NUMBER, T.UNKNOWN}


@dataclass(frozen=True, slots=True)
class Value:
    """A value as the checker sees it: a coarse type, the agents it came from (its static
    provenance, for the handoff rule) and, for numbers, an upper bound when one is known (for
    the budget check); `exact` when the bound is the value itself."""

    type: str = T.UNKNOWN
    sources: frozenset[str] = frozenset()
    bound: float | None = None
    exact: bool = False
    item: Value | None = None
    length: int | None = None
    """For a list written out in place: how many items it has."""
    model: builtins.type[BaseModel] | None = None
    """The pydantic model class, when check imported it: of a structured answer itself, or of
    the `.value` of an agent's output asked for with `output: Model`."""

    def element(self) -> Value:
        """What one item of this sequence is (its provenance included)."""
        base = self.item or Value()
        return replace(base, sources=base.sources | self.sources)


def item_of(sequence: Value) -> Value:
    """One item, as an index or a `for` gives it: an item of the outcomes of `parallel` or
    `pipeline` is an outcome (`Ok`, `Failed`, ...) around the value, not the value, so the
    fields of the value's model are not its fields."""
    item = sequence.element()
    return replace(item, model=None) if sequence.type == T.OUTCOMES else item


def number(bound: float | None = None, exact: bool = False) -> Value:
    return Value(T.NUMBER, bound=bound, exact=exact)


def merge(a: Value, b: Value) -> Value:
    """A value that is either `a` or `b` (a name after an `if`, the items of a list)."""
    same = a.type == b.type
    bound = max(a.bound, b.bound) if a.bound is not None and b.bound is not None else None
    return Value(
        a.type if same else T.UNKNOWN,
        a.sources | b.sources,
        bound,
        same and a.exact and b.exact and a.bound == b.bound,
        a.item if same else None,
        a.length if a.length == b.length else None,
        a.model if same and a.model is b.model else None,
    )


def sources_of(values: list[Value]) -> frozenset[str]:
    return frozenset().union(*(v.sources for v in values))


@dataclass
class AgentInfo:
    """One declared agent, as the steps check needs it."""

    decl: ast.AgentDecl
    allowance: float | None = None
    tools: tuple[str, ...] = ()
    card_vars: frozenset[str] = frozenset()
    """Variables its role card uses (`{{ name }}`), which every call must pass."""


@dataclass
class Context:
    """Shared state of one check: what the declarations say, and the diagnostics so far."""

    filename: str
    base_dir: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    agents: dict[str, AgentInfo] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    imports: dict[str, ast.UseName] = field(default_factory=dict)
    resolved: dict[str, object] = field(default_factory=dict)
    """What each `use`d name is in Python, when check imported its module (`resolve=True`)."""
    params: dict[str, ast.Param] = field(default_factory=dict)
    budget: dict[str, float] = field(default_factory=dict)
    used_agents: set[str] = field(default_factory=set)
    tools: tuple[str, ...] = field(default_factory=tool_names)
    reported: set[tuple[str, str, int | None, int | None]] = field(default_factory=set)

    def report(self, severity: Severity, code: str, message: str, node: Located) -> None:
        """Record a diagnostic at `node` (anything with line/column), once per place."""
        key = (code, message, node.line, node.column)
        if key not in self.reported:
            self.reported.add(key)
            self.diagnostics.append(Diagnostic.at(node, code, message, self.filename, severity))

    def error(self, code: str, message: str, node: Located) -> None:
        self.report("error", code, message, node)

    def warning(self, code: str, message: str, node: Located) -> None:
        self.report("warning", code, message, node)

    def unknown(
        self, code: str, what: str, name: str, known: Iterable[str], node: Located, *, note: str
    ) -> None:
        """`unknown <what> '<name>'<note>`, with the closest of `known` when one is close."""
        self.error(code, f"unknown {what} '{name}'{note}{did_you_mean(name, known)}", node)

    def misuse(self, message: str, node: Located) -> None:
        """The commonest error: a name used in a way the language does not allow."""
        self.report("error", "misuse", message, node)


@dataclass(slots=True)
class Binding:
    """A name's value; `partial` says where it may be left unassigned (an `if`, a loop)."""

    value: Value
    line: int
    partial: str | None = None


@dataclass
class Scope:
    """Names visible in a block; a body, a branch and a loop's round each open a child."""

    names: dict[str, Binding] = field(default_factory=dict)
    parent: Scope | None = None
    sessions: tuple[str, ...] = ()

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def child(self) -> Scope:
        """A scope inside this one: reads see this one, writes stay apart."""
        return Scope(parent=self, sessions=self.sessions)


@dataclass
class Spend:
    """Agent calls made inside one `parallel` body or loop (or the whole flow), for the
    budget check."""

    tokens: float = 0.0
    calls: float = 0.0
    unbounded_tokens: bool = False
    agents: dict[str, float] = field(default_factory=dict)

    def absorb(self, inner: Spend, times: float | None) -> None:
        """Count a nested fan-out `times` over (or as unbounded when its size is unknown)."""
        if times is None:
            self.unbounded_tokens = True
            return
        self.tokens += inner.tokens * times
        self.calls += inner.calls * times
        self.unbounded_tokens |= inner.unbounded_tokens
        for agent, count in inner.agents.items():
            self.agents[agent] = self.agents.get(agent, 0.0) + count * times
