"""What a run is given: its team, services, options and the agent-call functions (frozen).

The composition root (`swarmflow.runner.wiring`) builds one `RunDeps` per run. Nothing in it
changes while the run goes on: what does change (the ledger, the run graph, the open
sessions and the caches) is the run's `RunState`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from swarmflow.core.experience_port import ExperiencePort
from swarmflow.core.messages import Model
from swarmflow.core.output import AgentOutput
from swarmflow.core.ports import (
    BoardPort,
    FeedbackPort,
    HumanChannel,
    ToolSource,
    WorkspaceProvider,
)
from swarmflow.core.pricing import PriceTable
from swarmflow.core.team import Agent, Team
from swarmflow.record.eventlog import EventLog
from swarmflow.record.journal import Journal
from swarmflow.runtime.rails import Rails


class CallRequest(NamedTuple):
    """One agent call as the flow asked for it, its prompt already rendered and checked."""

    agent: Agent
    """The team's declaration of the agent called, looked up once for the whole call."""
    text: str
    output: type[BaseModel] | None
    workspace: Any
    card_vars: dict[str, Any]

    @property
    def name(self) -> str:
        return self.agent.name


# The callers take the run's `RunContext` and the caller's `Scope` (runtime.context), typed
# `Any` here because a `RunContext` holds these deps: naming it would tie the two modules.
AgentCaller = Callable[[Any, Any, CallRequest], Awaitable[AgentOutput]]
"""Runs one agent call to its product (run, scope, request): `sessions.call.run_call`, or the
journaled layer that wraps it (`durable.journaled.journaled_call`) when the run keeps a
journal."""

TurnTaker = Callable[[Any, str, type[BaseModel] | None], Awaitable[BaseModel | None]]
"""Runs one turn of a kept session (session, text, output type): `sessions.structured.take_turn`,
or the journaled layer that wraps it (`durable.replay.journaled_turn`)."""


@dataclass(frozen=True, slots=True)
class RunDeps:
    """Everything one run is given, fixed for the run's life."""

    run_id: str
    run_dir: Path
    team: Team
    log: EventLog
    model_for: Callable[[Agent], Model]
    tools: ToolSource
    human: HumanChannel | None
    workspaces: WorkspaceProvider | None
    prices: PriceTable
    rails: Rails
    call_agent: AgentCaller
    take_turn: TurnTaker
    board_for: Callable[[Any], BoardPort]
    """The run's message board, made on first use (`teams.board.board_for`; given the run)."""
    journal: Journal | None = None
    """Records finished calls and answers; on resume, matches calls against the records."""
    card_path: tuple[str, ...] = (".",)
    keep_workspaces: bool = False
    context_tokens: int | None = None
    experience: ExperiencePort | None = None
    """Notes from earlier runs offered to its sessions, and the reflection at its end
    (`run(experience=...)`, docs/context.md); None: the run neither reads nor writes any."""
    goals: Mapping[str, tuple[Any, ...]] | None = None
    """Goal evaluators by agent name (`run(goals=...)`)."""
    feedback: FeedbackPort | None = None
    """Language-server feedback on edits, for agents that declare `feedback` (docs/feedback.md)."""

    def write_ahead(self) -> None:
        """The write barrier, called before every external effect (model call, tool run,
        commit, question): the events and journal records made since the last one go to disk,
        one write per file (docs/durability.md)."""
        self.log.flush()
        if self.journal is not None:
            self.journal.flush()
