"""Scopes of names for the steps check, and the spend tally for the budget check."""

from __future__ import annotations

from dataclasses import dataclass, field

from swarmflow.dsl.values import Value


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
