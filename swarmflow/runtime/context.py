"""The run context: everything one run shares, and the scope (branch, ledger) of the caller.

The current run and scope live in ContextVars, so operators find them without globals and
every task started inside a branch inherits that branch's scope.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.errors import ConfigError
from swarmflow.core.fingerprint import FingerprintIndex
from swarmflow.core.messages import Model
from swarmflow.core.ports import HumanChannel, ToolSource, Workspace, WorkspaceProvider
from swarmflow.core.pricing import PriceTable
from swarmflow.core.team import Agent, Team
from swarmflow.core.tokens import TokenEstimator
from swarmflow.runtime.eventlog import EventLog
from swarmflow.runtime.graph import RunGraph
from swarmflow.runtime.journal import Journal
from swarmflow.runtime.rail_registry import Rails


class OpenSession(Protocol):
    """What the run needs of a live agent session (`AgentSession` is the one kind)."""

    closed: bool

    def emit(self, cls: Any, **fields: Any) -> None:
        """Record an event in the session's name."""

    def close(self) -> None:
        """End the session for good."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Where the caller is: its branch path, its ledger and its parent graph node."""

    branch: str
    ledger: Ledger
    node: int | None = None


@dataclass(slots=True)
class RunContext:
    """State shared by everything in one run."""

    run_id: str
    run_dir: Path
    team: Team
    log: EventLog
    ledger: Ledger
    model_for: Callable[[Agent], Model]
    tools: ToolSource
    human: HumanChannel | None
    workspaces: WorkspaceProvider | None
    prices: PriceTable
    rails: Rails
    card_path: tuple[str, ...] = (".",)
    keep_workspaces: bool = False
    fingerprints: FingerprintIndex = field(default_factory=FingerprintIndex)
    products: dict[int, tuple[Any, frozenset[str]]] = field(default_factory=dict)
    graph: RunGraph = field(default_factory=RunGraph)
    sessions: set[OpenSession] = field(default_factory=set)
    agent_ledgers: dict[str, Ledger] = field(default_factory=dict)
    human_answers: dict[str, Any] = field(default_factory=dict)
    workspace_of: dict[str, Workspace] = field(default_factory=dict)
    goals: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    ledger_sets: dict[tuple[int, str], tuple[Ledger, list[Ledger]]] = field(default_factory=dict)
    """The ledgers a session charges, by branch ledger and agent (see AgentSession)."""
    profiles: dict[int, tuple[Agent, Any]] = field(default_factory=dict)
    """Each declared agent's resolved model, price and tools (see runtime.profile)."""
    context_tokens: int | None = None
    estimator: TokenEstimator = field(default_factory=TokenEstimator)
    """Prompt token estimates, learned per model from this run's settled calls."""
    subflows: dict[str, int] = field(default_factory=dict)
    """Sub-flows started so far, by parent branch (they number the sub-flows' branches)."""
    journal: Journal | None = None
    """Records finished calls and answers; on resume, matches calls against the records."""
    served_tools: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """The tools of each started tool provider (an MCP server), by the provider's id."""
    board: Any = None
    """The run's message board (`runtime.board.board_for` makes it on first use)."""

    def write_ahead(self) -> None:
        """The write barrier, called before every external effect (model call, tool run,
        commit, question): the events and journal records made since the last one go to disk,
        one write per file (docs/durability.md)."""
        self.log.flush()
        if self.journal is not None:
            self.journal.flush()

    def next_subflow(self, branch: str) -> int:
        """The index of the next sub-flow started in `branch` (stable across a resume)."""
        index = self.subflows.get(branch, 0)
        self.subflows[branch] = index + 1
        return index

    def agent_ledger(self, agent: Agent) -> Ledger | None:
        """The per-agent allowance ledger, a child of the run ledger (None if unlimited)."""
        if agent.allowance is None:
            return None
        ledger = self.agent_ledgers.get(agent.name)
        if ledger is None:
            ledger = self.ledger.child(f"agent:{agent.name}", Limits(tokens=agent.allowance))
            self.agent_ledgers[agent.name] = ledger
        return ledger

    def remember_product(self, value: Any, sources: frozenset[str]) -> None:
        """Tag an object an agent produced (structured outputs cannot carry attributes)."""
        self.products[id(value)] = (value, sources)

    def product_sources(self, value: Any) -> frozenset[str]:
        entry = self.products.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else frozenset()


_current_run: ContextVar[RunContext | None] = ContextVar("swarmflow_run", default=None)
current_session: ContextVar[OpenSession | None] = ContextVar("swarmflow_session", default=None)
"""The session whose turn the current task is running (adapters' callbacks read it)."""
_current_scope: ContextVar[Scope | None] = ContextVar("swarmflow_scope", default=None)


def current_run(operator: str = "this operator") -> RunContext:
    """The active run, or a clear error when called outside one."""
    run = _current_run.get()
    if run is None:
        raise ConfigError(f"{operator} can only be used inside a running flow (use swarmflow.run)")
    return run


def maybe_run() -> RunContext | None:
    return _current_run.get()


def current_scope() -> Scope:
    scope = _current_scope.get()
    if scope is None:
        run = current_run()
        return Scope("", run.ledger)
    return scope


def set_scope(scope: Scope) -> Token[Scope | None]:
    """Enter `scope`; pass the token to `reset_scope` (cheaper than the context manager)."""
    return _current_scope.set(scope)


def reset_scope(token: Token[Scope | None]) -> None:
    _current_scope.reset(token)


def enter_scope(scope: Scope) -> None:
    """Set the scope for the rest of the current task (each task has its own context copy)."""
    _current_scope.set(scope)


@contextmanager
def scoped(scope: Scope) -> Iterator[Scope]:
    """Enter a branch scope for the duration of the block."""
    token = _current_scope.set(scope)
    try:
        yield scope
    finally:
        _current_scope.reset(token)


@contextmanager
def running(run: RunContext, scope: Scope) -> Iterator[RunContext]:
    """Make `run` the active run."""
    token = _current_run.set(run)
    scope_token = _current_scope.set(scope)
    try:
        yield run
    finally:
        _current_scope.reset(scope_token)
        _current_run.reset(token)
