"""What a session is built with besides its conversation: its inbox and its sources of
evidence, its tool runner and the context its tools see."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from swarmflow.calls.metered import rails_at
from swarmflow.core.messages import Message
from swarmflow.core.ports import BoardPort, EditWatch, PostsEvidence, ToolContext, Workspace
from swarmflow.runtime.context import RunContext
from swarmflow.runtime.rails import Hook, Verdict
from swarmflow.sessions.inbox import SessionInbox, board_source
from swarmflow.sessions.toolrun import RailGate, ToolRunner

if TYPE_CHECKING:
    from swarmflow.sessions.parts import SessionParts


class Collaborators(NamedTuple):
    """What a session works with besides its agent's profile, given when it is built (a
    named tuple: every session is given one, built in one call)."""

    workspace: Workspace | None = None
    messenger: Callable[..., Awaitable[str]] | None = None
    """Behind the `message_agent` tool (called with the session, the recipient and the text):
    a fresh call of the recipient, or a Team's routing."""
    board: BoardPort | None = None
    """The board its tools use (an agent with board tools is given the run's)."""
    screen: Callable[[RunContext, str, Message], Message] | None = None
    """The handoff check on what its tools return, called with the run and this agent's
    name: a result that holds another agent's product without an edge to it is withheld."""
    hear: Callable[[], str] | None = None
    """Passive awareness (a Team run gives it): what teammates said since the last step, as
    text for the model, or "" when nothing; read at each step boundary."""


ALONE = Collaborators()
"""A session with no workspace, board, messenger or screen."""


def open_inbox(session: SessionParts, hear: Callable[[], str] | None) -> SessionInbox:
    """The inbox, with the board's mentions as a source and the workspace subscribed."""
    inbox = SessionInbox(session.agent.name, session.id, session.events)
    if hear is not None:
        inbox.add_source(board_source(hear))
    if (shared := posting(session.workspace)) is not None:
        shared.subscribe(inbox)
    return inbox


def tool_runner(
    session: SessionParts,
    messenger: Callable[..., Awaitable[str]] | None,
    board: BoardPort | None,
) -> ToolRunner:
    """The runner of the session's tool calls, with the context its tools see (`messenger`
    is behind `message_agent`, called with the session, the recipient and the text)."""
    run, rails = session.run, bool(session.run.deps.rails)
    emit = session.events  # not the bound `emit`: no cycle back to the session
    context = ToolContext(
        agent=session.agent.name,
        session=session.id,
        workspace=session.workspace,
        emit=emit,
        message_agent=None if messenger is None else partial(messenger, session),
        declaration=session.agent,
        budget=session.scope.ledger.snapshot,
        board=board,
        run_dir=run.deps.run_dir,
    )
    return ToolRunner(
        session.profile.source,
        session.profile.allowed,
        context=context,
        emit=emit,
        rails=_rails_of(session) if rails else None,
        write_ahead=run.deps.write_ahead,
        watch=_edit_watch(session),
    )


def _rails_of(session: SessionParts) -> RailGate:
    """The tool calls' rails, run as the session's agent at its current step."""

    async def gate(hook: Hook, payload: Any) -> Verdict:
        return await rails_at(session.caller, hook, payload, session.steps)

    return gate


def _edit_watch(session: SessionParts) -> EditWatch | None:
    """Language-server feedback on the session's edits, when its agent asks for it."""
    feedback = session.run.deps.feedback
    if feedback is None or session.workspace is None or session.agent.feedback is None:
        return None
    return feedback.watch(session.agent, session.workspace, session.inbox)


def posting(workspace: Workspace | None) -> PostsEvidence | None:
    """The workspace as a source of evidence (a shared one), or None. A duck check: a
    runtime-checkable protocol's `isinstance` costs about 30 µs, paid by every session."""
    if workspace is None or not callable(getattr(workspace, "subscribe", None)):
        return None
    return cast(PostsEvidence, workspace)
