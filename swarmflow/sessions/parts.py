"""The session as the modules beside it see it (its requests, its wiring, an outside turn,
the handoff rule): a protocol, so that they need not import the session that uses them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from swarmflow.calls.metered import Caller
from swarmflow.core.messages import Message, Model, Usage
from swarmflow.core.ports import Workspace
from swarmflow.core.states import EndReason, SessionState
from swarmflow.core.team import Agent
from swarmflow.record.eventlog import EventsAs
from swarmflow.record.events import EventBase
from swarmflow.runtime.context import RunContext, Scope
from swarmflow.sessions.inbox import SessionInbox
from swarmflow.sessions.profile import AgentProfile


class SessionParts(Protocol):
    """What `AgentSession` offers the modules beside it."""

    run: RunContext
    agent: Agent
    id: str
    scope: Scope
    profile: AgentProfile
    model: Model
    caller: Caller
    workspace: Workspace | None
    inbox: SessionInbox
    history: list[Message]
    history_units: int
    system: str | None
    steps: int
    usage: Usage
    cost: float
    last_text: str
    error: BaseException | None
    state: SessionState
    closed: bool
    detail: str
    events: EventsAs

    def emit(self, cls: type[EventBase], **fields: object) -> None: ...

    def append(self, message: Message) -> None: ...

    def to(self, target: SessionState) -> None: ...

    def end(self, reason: EndReason, detail: str = "") -> None: ...


@dataclass(frozen=True, slots=True)
class Finish:
    """The inner loop's proposal to end a round: a final answer or a submission."""

    reason: EndReason
    text: str


def cancel_reason(run: RunContext) -> EndReason:
    """Why a session cancelled from outside ended: the run's wall clock, or a cancellation."""
    root = run.state.ledger
    if root.limits.seconds is not None and root.elapsed() >= root.limits.seconds:
        return EndReason.WALL_CLOCK
    return EndReason.CANCELLED


def describe(exc: BaseException) -> str:
    """An exception as a session's end detail: its type and what it says."""
    return f"{type(exc).__name__}: {exc}"
