"""What the checker's passes share: declarations, the diagnostics so far, reporting, the scopes
of names, and the spend tally for the budget check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swarmflow.dsl import ast
from swarmflow.dsl.callables import callable_names, names, tool_names
from swarmflow.dsl.diagnostics import Diagnostic, NameIndex, Severity, listing
from swarmflow.dsl.values import Value

HUMAN = "human"
OPERATORS = tuple(sorted(names("operator")))
"""The six operators, as the language spells them."""
CALLABLE_BUILTINS = callable_names()
BUILTIN_TYPES = ("str", "int", "float", "bool", "list", "dict", "any")


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
    """Shared state of one check."""

    filename: str
    base_dir: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    agents: dict[str, AgentInfo] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    imports: dict[str, ast.UseName] = field(default_factory=dict)
    params: dict[str, ast.Param] = field(default_factory=dict)
    budget: dict[str, float] = field(default_factory=dict)
    used_agents: set[str] = field(default_factory=set)
    tools: tuple[str, ...] = field(default_factory=tool_names)
    assigned_at: dict[str, int] = field(default_factory=dict)
    name_index: NameIndex = field(default_factory=lambda: NameIndex(()))
    """Every name the steps can refer to, for did-you-mean in linear time."""
    reported: set[tuple[Any, ...]] = field(default_factory=set)

    def report(self, severity: Severity, code: str, message: str, node: Any) -> None:
        """Record a diagnostic at `node` (anything with line/column), once per place."""
        key = (code, message, node.line, node.column)
        if key in self.reported:
            return
        self.reported.add(key)
        self.diagnostics.append(Diagnostic.at(node, code, message, self.filename, severity))

    def error(self, code: str, message: str, node: Any) -> None:
        self.report("error", code, message, node)

    def warning(self, code: str, message: str, node: Any) -> None:
        self.report("warning", code, message, node)

    def allows(self, source: str, target: str) -> bool:
        return source == target or (source, target) in self.edges

    def shown_edges(self) -> str:
        return listing([f"{a} -> {b}" for a, b in sorted(self.edges)])

    def known_names(self) -> set[str]:
        """Every name a step may refer to, before its own variables."""
        if self._known is None:
            self._known = {*self.params, *self.imports, *self.agents, *CALLABLE_BUILTINS}
        return self._known

    _known: set[str] | None = None


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

    def visible(self) -> set[str]:
        out: set[str] = set()
        scope: Scope | None = self
        while scope is not None:
            out.update(scope.names)
            scope = scope.parent
        return out

    def child(self) -> Scope:
        """A scope inside this one (a body, a branch, a round): reads see this one, writes
        stay apart."""
        return Scope(parent=self, sessions=self.sessions)


@dataclass
class Spend:
    """Agent calls made inside one `parallel` body (or the whole flow), for the budget check."""

    tokens: float = 0.0
    calls: float = 0.0
    unbounded_tokens: bool = False
    agents: dict[str, float] = field(default_factory=dict)

    def add_call(self, agent: str, allowance: float | None, times: float = 1.0) -> None:
        self.calls += times
        self.agents[agent] = self.agents.get(agent, 0.0) + times
        if allowance is None:
            self.unbounded_tokens = True
        else:
            self.tokens += allowance * times

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
