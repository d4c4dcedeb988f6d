"""Opening sessions and calling agents: the handoff check, the turn, and what comes back.

`call_agent` runs one fresh session of a declared agent to completion and returns an
`AgentOutput`. A session that ends in error raises `AgentFailed`; one stopped by the budget
raises `BudgetExhausted`; both carry the partial output, so nothing done is lost.

The call is layered: `call_agent` (a node of the run graph, the prompt's handoff check) hands
the request to the run's agent caller, `run_call` here or the journaled layer that wraps it
(`durable.journaled`), chosen by the composition root; both open the session
(`open_call`) and work it to its product (`work_call`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio.lowlevel
from pydantic import BaseModel

from swarmflow.core.errors import (
    AgentFailed,
    BudgetExhausted,
    ConfigError,
)
from swarmflow.core.ids import new_session_id
from swarmflow.core.output import AgentOutput, SourcedStr
from swarmflow.core.patch import Patch
from swarmflow.core.ports import BoardPort, Workspace
from swarmflow.core.states import EXHAUSTED_REASONS, EndReason, SessionState
from swarmflow.core.team import Agent
from swarmflow.record.events import WorkspaceChanged
from swarmflow.runtime.context import (
    RunContext,
    Scope,
    current_run,
    current_scope,
    reset_scope,
    set_scope,
)
from swarmflow.runtime.deps import CallRequest
from swarmflow.sessions.cards import render_card
from swarmflow.sessions.handoff import (
    check_outgoing,
    given_to,
    remember_output,
    screen_tool_result,
)
from swarmflow.sessions.messaging import messenger_for
from swarmflow.sessions.prompts import render_prompt
from swarmflow.sessions.session import AgentSession, Messenger
from swarmflow.sessions.structured import ask_structured
from swarmflow.sessions.wiring import Collaborators

BOARD_TOOLS = frozenset({"create_thread", "send_message", "wait_for_mention"})
"""A session whose agent has any of these tools is given the run's board."""


async def open_session(
    run: RunContext,
    agent: Agent,
    *,
    scope: Scope | None = None,
    card_vars: dict[str, Any] | None = None,
    workspace: Any = None,
    adopted: Workspace | None = None,
    card: str | None = None,
    messenger: Messenger | None = None,
    board: BoardPort | None = None,
    hear: Callable[[], str] | None = None,
) -> AgentSession:
    """Check the card variables' handoff, render the card, acquire the workspace, and build
    the session of `agent` (a declared one: see `declared_agent`) with what it works with.

    `adopted` is this session's own workspace taken over from an interrupted run; `card` the
    role card already rendered from `card_vars` (a journaled call renders it for its key).
    A Team run gives its roles its own `messenger`, `board` and `hear`.
    """
    name = agent.name
    card_vars = card_vars or {}
    system = card if card is not None else rendered_card(run, agent, card_vars)
    if card_vars or system:
        check_outgoing(
            run, name, system or "", values=card_vars, via="template variable", agent=name
        )
    session_id = new_session_id(agent.name)
    own = _borrowed_workspace(run, workspace)
    if own is None and agent.workspace != "none":
        own = adopted or await _acquire(run, agent, session_id)
        run.state.workspace_of[session_id] = own
    collaborators = Collaborators(
        workspace=own,
        messenger=_messenger(run, agent, messenger),
        board=_board(run, agent, board),
        screen=screen_tool_result,  # one function for every session: no closure each
        hear=hear,
    )
    return AgentSession(
        run,
        agent,
        scope=scope or current_scope(),
        system=system,
        session_id=session_id,
        collaborators=collaborators,
    )


def _messenger(run: RunContext, agent: Agent, given: Messenger | None) -> Messenger | None:
    if "message_agent" not in agent.tools:
        return None
    return given or messenger_for(run, call_agent)


def _board(run: RunContext, agent: Agent, given: BoardPort | None) -> BoardPort | None:
    if given is not None or BOARD_TOOLS.isdisjoint(agent.tools):
        return given
    return run.deps.board_for(run)


def rendered_card(run: RunContext, agent: Agent, card_vars: dict[str, Any]) -> str | None:
    """The agent's role card rendered with `card_vars` (None: it has none)."""
    return render_card(agent.card, card_vars, run.deps.card_path) if agent.card else None


def declared_agent(run: RunContext, name: str) -> Agent:
    """The team's agent called `name`; an unknown name names the closest declared one."""
    found = run.deps.team.find(name) if isinstance(name, str) else None
    if found is None:
        close = difflib.get_close_matches(str(name), run.deps.team.names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        declared = ", ".join(run.deps.team.names) or "no agents"
        raise ConfigError(
            f"unknown agent {name!r}{hint}; the team declares {declared}", agent=str(name)
        )
    return found


def _borrowed_workspace(run: RunContext, workspace: Any) -> Workspace | None:
    """`workspace=` may name another agent's output (its workspace is reused) or a path."""
    if workspace is None:
        return None
    if isinstance(workspace, AgentOutput):
        found = run.state.workspace_of.get(workspace.session)
        if found is None:
            raise ConfigError(f"agent output of {workspace.agent!r} has no workspace to share")
        return found
    if isinstance(workspace, str | Path):
        return _PathWorkspace(Path(workspace))
    return workspace  # type: ignore[no-any-return]


class _PathWorkspace:
    """A borrowed plain directory."""

    kind = "local"

    def __init__(self, root: Path) -> None:
        self.root = root

    async def finalize(self, message: str) -> Patch | None:
        return None

    async def release(self, keep: bool = False) -> None:
        return None


async def _acquire(run: RunContext, agent: Agent, session: str) -> Workspace:
    if run.deps.workspaces is None:
        raise ConfigError(
            f"agent {agent.name!r} wants a {agent.workspace!r} workspace but the run has no "
            "workspace provider (pass repo= to run())",
            agent=agent.name,
        )
    return await run.deps.workspaces.acquire(agent.workspace, agent.name, session)


async def call_agent(
    name: str,
    prompt: Any = "",
    /,
    *,
    output: type[BaseModel] | None = None,
    workspace: Any = None,
    **card_vars: Any,
) -> AgentOutput:
    """Run one fresh session of agent `name` to completion, as a node of the run graph."""
    await anyio.lowlevel.checkpoint_if_cancelled()  # inside a cancelled scope nothing is sent
    run = current_run(f"agent({name!r})")
    parent = current_scope()
    node = run.state.graph.open("agent", parent.branch, parent.node, name)
    scope = Scope(parent.branch, parent.ledger, node)
    token = set_scope(scope)
    status = "failed"
    try:
        agent = declared_agent(run, name)
        text = render_prompt(prompt)
        check_outgoing(run, name, text, values=prompt, via="prompt", agent=name)
        request = CallRequest(agent, text, output, workspace, card_vars)
        result = await run.deps.call_agent(run, scope, request)
        status = "ok"
        return result
    finally:
        reset_scope(token)
        run.state.graph.close(node, status)


async def run_call(run: RunContext, scope: Scope, request: CallRequest) -> AgentOutput:
    """One agent call, unjournaled: a fresh session worked to its product."""
    session = await open_call(run, scope, request)
    return await work_call(run, session, request)


def open_call(
    run: RunContext,
    scope: Scope,
    request: CallRequest,
    *,
    card: str | None = None,
    adopted: Workspace | None = None,
) -> Coroutine[Any, Any, AgentSession]:
    """The fresh session of one agent call (await it)."""
    # Not `async def`: returning `open_session`'s coroutine saves a frame in every call.
    return open_session(
        run,
        request.agent,
        scope=scope,
        card_vars=request.card_vars,
        workspace=request.workspace,
        adopted=adopted,
        card=card,
    )


async def work_call(run: RunContext, session: AgentSession, request: CallRequest) -> AgentOutput:
    """Run the call's turn on its session, commit its own workspace, close it, and return
    the product (or raise for a failed or stopped session, the product attached)."""
    try:
        if request.output is None:  # a fresh session has no other caller to serialise with
            await session.turn_unlocked(request.text)
            value = None
        else:
            value = await ask_structured(session, request.text, request.output)
        owned = request.workspace is None and session.workspace is not None
        patch = await finalize_workspace(run, session) if owned else None
    finally:
        session.close()
    return finish_output(run, session, request.text, value, patch)


async def finalize_workspace(run: RunContext, session: AgentSession) -> Patch | None:
    """Commit the session's own workspace and record the change (a native call's and a
    harness call's alike)."""
    if session.workspace is None:
        return None
    lines = session.last_text.strip().splitlines()
    summary = lines[0][:72] if lines else "work"
    run.deps.write_ahead()  # a commit is an external effect
    patch = await session.workspace.finalize(f"{session.agent.name}: {summary}")
    if patch is not None and patch.commit and not patch.empty:
        session.emit(
            WorkspaceChanged,
            workspace=session.workspace.kind,
            commit=patch.commit,
            git_branch=patch.branch,
            files=list(patch.files),
        )
    return patch


def finish_output(
    run: RunContext, session: AgentSession, given: str, value: Any, patch: Patch | None
) -> AgentOutput:
    """Fingerprint and tag what the agent produced, then return it or raise."""
    sources = session.profile.provenance  # what a session produces is its agent's
    out = AgentOutput(
        agent=session.agent.name,
        session=session.id,
        text=SourcedStr(session.last_text, sources),
        value=value,
        patch=patch,
        usage=session.usage,
        state=str(session.state),  # StrEnums: their values, without `.value`'s Python call
        reason=str(session.reason or EndReason.COMPLETED),
        provenance=sources,
        detail=session.detail,
    )
    remember_output(run, session.agent.name, out, given_to(session))
    _raise_for_state(session, out)
    return out


def _raise_for_state(session: AgentSession, out: AgentOutput) -> None:
    if session.state is not SessionState.ERROR and session.reason not in EXHAUSTED_REASONS:
        return
    where = {"agent": session.agent.name, "session": session.id}
    if session.state is SessionState.ERROR:
        err = AgentFailed(
            f"agent {session.agent.name!r} failed: {session.detail}",
            reason=EndReason.ERROR.value,
            **where,
        )
        err.output = out  # type: ignore[attr-defined]
        raise err from session.error
    if session.reason in EXHAUSTED_REASONS:
        reason = session.reason.value if session.reason else ""
        budget_err = BudgetExhausted(
            f"agent {session.agent.name!r} stopped: {reason}: {session.detail}",
            reason=reason,
            **where,
        )
        budget_err.output = out  # type: ignore[attr-defined]
        raise budget_err
