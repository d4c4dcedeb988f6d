"""What a run holds while it goes on: its ledger, graph, open sessions and caches (mutable).

Apart from `RunDeps` (what the run is given), so that what changes during a run is one small
value that can be read, and reasoned about, on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.fingerprint import FingerprintIndex
from swarmflow.core.ports import BoardPort, Workspace
from swarmflow.core.renders import RenderLog
from swarmflow.core.team import Agent
from swarmflow.core.tokens import TokenEstimator
from swarmflow.runtime.graph import RunGraph


class OpenSession(Protocol):
    """What the run needs of a live agent session (`AgentSession` is the one kind)."""

    closed: bool

    def emit(self, cls: Any, **fields: Any) -> None:
        """Record an event in the session's name."""

    def close(self) -> None:
        """End the session for good."""


@dataclass(slots=True)
class RunState:
    """The mutable part of one run."""

    ledger: Ledger
    graph: RunGraph = field(default_factory=RunGraph)
    sessions: set[OpenSession] = field(default_factory=set)
    fingerprints: FingerprintIndex = field(default_factory=FingerprintIndex)
    products: dict[int, tuple[Any, frozenset[str]]] = field(default_factory=dict)
    """What agents produced that cannot carry attributes, by id, with its provenance."""
    renders: RenderLog = field(default_factory=RenderLog)
    """Agents' texts the flow's code rendered into strings of its own (`core.renders`)."""
    agent_ledgers: dict[str, Ledger] = field(default_factory=dict)
    human_answers: dict[str, Any] = field(default_factory=dict)
    workspace_of: dict[str, Workspace] = field(default_factory=dict)
    ledger_sets: dict[tuple[int, str], tuple[Ledger, list[Ledger]]] = field(default_factory=dict)
    """The ledgers a session charges, by branch ledger and agent (see AgentSession)."""
    profiles: dict[int, tuple[Agent, Any]] = field(default_factory=dict)
    """Each declared agent's resolved model, price and tools (see sessions.profile)."""
    estimator: TokenEstimator = field(default_factory=TokenEstimator)
    """Prompt token estimates, learned per model from this run's settled calls."""
    subflows: dict[str, int] = field(default_factory=dict)
    """Sub-flows started so far, by parent branch (they number the sub-flows' branches)."""
    served_tools: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """The tools of each started tool provider (an MCP server), by the provider's id."""
    board: BoardPort | None = None
    """The run's message board, made on first use (`teams.board.board_for`)."""

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
