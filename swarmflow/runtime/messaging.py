"""Agent-initiated messages: the `message_agent` tool's delivery, roster and edge checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from swarmflow.core.errors import SwarmflowError, ToolError, TopologyError
from swarmflow.core.events import MessageSent, SpawnRefused
from swarmflow.core.output import AgentOutput, SourcedStr
from swarmflow.runtime.context import RunContext
from swarmflow.runtime.handoff import check_handoff
from swarmflow.runtime.session import AgentSession

CallAgent = Callable[[str, SourcedStr], Awaitable[AgentOutput]]
"""Runs the recipient agent on a message and returns its output (the `agent` operator's call)."""


def messenger_for(run: RunContext, session: AgentSession, call: CallAgent) -> Any:
    """The callable behind `session`'s `message_agent` tool; `call` runs the recipient."""

    async def message_agent(to: str, text: str) -> str:
        return await send_message(run, session, to, text, call)

    return message_agent


async def send_message(
    run: RunContext, sender: AgentSession, to: str, text: str, call: CallAgent
) -> str:
    """Deliver a `message_agent` call: roster and edge checks, then the recipient's answer."""
    me = sender.agent.name
    if not run.team.has(to):
        reason = f"no agent named {to!r}: the roster cannot change within a run"
        sender.emit(SpawnRefused, requested=to, reason=reason)
        raise ToolError(f"{reason}; teammates: {', '.join(run.team.names)}")
    try:
        check_handoff(run, to, SourcedStr(text, frozenset({me})), via="message_agent", agent=me)
    except TopologyError as exc:
        raise ToolError(f"refused: {exc.message}") from None
    sender.emit(MessageSent, source=me, target=to, text=text[:2000])
    try:
        sender.wait_for_teammate()
        reply = await call(to, SourcedStr(text, frozenset({me})))
    except SwarmflowError as exc:
        return f"{to} could not answer: {exc}"
    finally:
        sender.resume_tools()
    return reply.text
