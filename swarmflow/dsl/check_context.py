"""What the checker's passes share: declarations, the diagnostics so far, and reporting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swarmflow.dsl import ast
from swarmflow.dsl.callables import callable_names, names, tool_names
from swarmflow.dsl.diagnostics import Diagnostic, NameIndex, Severity, listing

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
