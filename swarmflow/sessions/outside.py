"""A turn whose work an outside program does (`swarmflow.harnesses`): what the program's model
calls see of the session, and how the turn begins and ends.

The metering endpoint talks to an `OutsideTurn` and to the metered call (`calls.metered`),
never to the session's internals: who the calls are made as (purpose "harness"), the model,
the step count, the handoff check on a whole request, and the counting of each call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from swarmflow.calls.metered import Called, Caller
from swarmflow.core.messages import Model, ModelRequest
from swarmflow.core.states import EndReason, SessionState
from swarmflow.core.tokens import TokenEstimator
from swarmflow.record.events import AgentFinished, EventBase
from swarmflow.sessions.handoff import check_outgoing, shown_text

if TYPE_CHECKING:
    from swarmflow.sessions.parts import SessionParts


class OutsideTurn:
    """The session whose turn an outside program does, as its model calls see it."""

    __slots__ = ("_session", "caller", "estimator", "max_output_tokens", "model", "model_name")

    def __init__(self, session: SessionParts) -> None:
        self._session = session
        self.caller: Caller = replace(session.caller, purpose="harness")
        self.model: Model = session.model
        self.model_name = session.profile.model_name
        self.max_output_tokens = session.agent.max_output_tokens
        self.estimator: TokenEstimator = session.run.state.estimator

    @property
    def steps(self) -> int:
        """The model calls the session has made."""
        return self._session.steps

    def emit(self, cls: type[EventBase], **fields: object) -> None:
        """Record an event with the session's envelope."""
        self._session.emit(cls, **fields)

    def check(self, request: ModelRequest) -> None:
        """The handoff rule on everything `request` shows the model: each message's text and
        tool-call arguments, and each tool's name, description and schema (its parameters'
        descriptions and enums too).

        Raises:
            TopologyError: a text holds another agent's product with no edge to this agent
                (recorded as `handoff_refused`, via "harness request").
        """
        session = self._session
        agent = session.agent.name
        check_outgoing(session.run, agent, shown(request), via="harness request", agent=agent)

    def count(self, called: Called) -> None:
        """Add a metered call to the session's steps, usage and cost."""
        session = self._session
        session.steps += called.calls
        session.usage += called.usage
        session.cost += called.cost


def shown(request: ModelRequest) -> str:
    """Everything a request shows the model, as text."""
    parts: list[str] = []
    for m in request.messages:
        if m.content:
            parts.append(m.content)
        parts.extend(call.arguments for call in m.tool_calls)
    for spec in request.tools:
        parts.extend((spec.name, spec.description, shown_text(spec.parameters)))
    return "\n".join(parts)


def begin_outside(session: SessionParts) -> OutsideTurn:
    """Start a turn whose work an outside program does: the session is calling its model
    until `end_outside`; each of the program's model calls is metered as the turn's."""
    if session.state.is_end:
        session.to(SessionState.IDLE)
    session.error = None
    session.to(SessionState.PRECHECK)
    session.to(SessionState.CALLING_MODEL)
    return OutsideTurn(session)


def end_outside(
    session: SessionParts,
    reason: EndReason,
    detail: str,
    text: str,
    error: BaseException | None = None,
) -> None:
    """End the outside turn with its answer, as a native turn ends (`agent_finished`)."""
    session.last_text = text
    session.error = error
    session.end(reason, detail)
    session.emit(AgentFinished, produced_content=bool(text.strip()), preview=text[:1000])
