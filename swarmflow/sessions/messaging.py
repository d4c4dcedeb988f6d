"""Agent-initiated messages: the `message_agent` tool's delivery, roster and edge checks.

Outside a team, a message opens a fresh one-shot session of the recipient inside the sender's
tool call (the `agent` operator's call), so messages can nest (a -> b -> a ...). In a Team run
(`swarmflow.teams.team_run`) the same checks run and the message goes to the recipient's
long-lived role session instead; the team adds its own refusals (a crashed role, a message that
would wait on its own sender). The nesting is bounded: past `MAX_MESSAGE_DEPTH` the message is
refused and the model is told why, instead of sessions nesting until the stack runs out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar

from swarmflow.core.errors import SwarmflowError, ToolError, TopologyError
from swarmflow.core.output import AgentOutput, SourcedStr
from swarmflow.core.secrets import preview
from swarmflow.record.events import MessageRefused, MessageSent, SpawnRefused
from swarmflow.runtime.context import RunContext
from swarmflow.sessions.handoff import check_outgoing, remember_message
from swarmflow.sessions.session import AgentSession, Messenger

MAX_MESSAGE_DEPTH = 8
"""How many `message_agent` calls may be open inside one another."""
_MESSAGE_PREVIEW = 2000
_chain: ContextVar[tuple[str, ...]] = ContextVar("swarmflow_message_chain", default=())

CallAgent = Callable[[str, SourcedStr], Awaitable[AgentOutput]]
"""Runs the recipient agent on a message and returns its output (the `agent` operator's call,
or a Team run's delivery to the recipient's role session)."""

Refusal = Callable[[str, str], str]
"""`refuse(sender, recipient)`: why a Team run refuses this message, or "" to deliver it."""


def messenger_for(run: RunContext, call: CallAgent, refuse: Refusal | None = None) -> Messenger:
    """What a session's `message_agent` tool calls with its sender; `call` runs the
    recipient."""

    async def message_agent(sender: AgentSession, to: str, text: str) -> str:
        return await send_message(run, sender, to, text, call, refuse=refuse)

    return message_agent


async def send_message(
    run: RunContext,
    sender: AgentSession,
    to: str,
    text: str,
    call: CallAgent,
    *,
    refuse: Refusal | None = None,
) -> str:
    """Deliver a `message_agent` call: roster, edge and depth checks, then the recipient's
    answer."""
    me = sender.agent.name
    if not run.deps.team.has(to):
        reason = f"no agent named {to!r}: the roster cannot change within a run"
        sender.emit(SpawnRefused, requested=to, reason=reason)
        raise ToolError(f"{reason}; teammates: {', '.join(run.deps.team.names)}")
    _check_route(run, sender, to, text, refuse)
    chain = _chain.get()
    sender.emit(MessageSent, source=me, target=to, text=preview(text, _MESSAGE_PREVIEW))
    token = _chain.set((*chain, f"{me} -> {to}"))
    try:
        sender.wait_for_teammate()
        reply = await call(to, SourcedStr(text, frozenset({me})))
    except SwarmflowError as exc:
        return f"{to} could not answer: {exc}"
    finally:
        _chain.reset(token)
        sender.resume_tools()
    return reply.text


def _check_route(
    run: RunContext, sender: AgentSession, to: str, text: str, refuse: Refusal | None
) -> None:
    """Refuse a self-message without a self-edge, a chain too deep, what the team refuses,
    or a missing edge."""
    me = sender.agent.name
    chain = _chain.get()
    reason = ""
    if to == me and not run.deps.team.declares(me, me):
        reason = f"no edge {me} -> {me}: an agent messaging itself needs a declared self-edge"
    elif len(chain) >= MAX_MESSAGE_DEPTH:
        shown = ", ".join([*chain, f"{me} -> {to}"])
        reason = f"messages nested more than {MAX_MESSAGE_DEPTH} deep ({shown})"
    elif refuse is not None:
        reason = refuse(me, to)
    if reason:
        sender.emit(MessageRefused, source=me, target=to, reason=reason)
        raise ToolError(f"refused: {reason}")
    remember_message(run, sender, text)
    try:
        sent = SourcedStr(text, frozenset({me}))
        check_outgoing(run, to, text, values=sent, via="message_agent", agent=me)
    except TopologyError as exc:
        raise ToolError(f"refused: {exc.message}") from None
