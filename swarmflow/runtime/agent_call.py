"""Opening sessions and calling agents: the handoff check, the turn, and what comes back.

`call_agent` runs one fresh session of a declared agent to completion and returns an
`AgentOutput`. A session that ends in error raises `AgentFailed`; one stopped by the budget
raises `BudgetExhausted`; both carry the partial output, so nothing done is lost.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

import anyio.lowlevel
from pydantic import BaseModel

from swarmflow.core.errors import (
    AgentFailed,
    BudgetExhausted,
    ConfigError,
)
from swarmflow.core.events import WorkspaceChanged
from swarmflow.core.output import AgentOutput, SourcedStr
from swarmflow.core.patch import Patch
from swarmflow.core.ports import Workspace
from swarmflow.core.states import EXHAUSTED_REASONS, EndReason, SessionState
from swarmflow.core.team import Agent
from swarmflow.runtime.cards import render_card
from swarmflow.runtime.context import (
    RunContext,
    Scope,
    current_run,
    current_scope,
    reset_scope,
    set_scope,
)
from swarmflow.runtime.handoff import (
    check_outgoing,
    given_to,
    remember_output,
    screen_tool_result,
)
from swarmflow.runtime.journal import CallKey, digest_of
from swarmflow.runtime.messaging import messenger_for
from swarmflow.runtime.prompts import render_prompt
from swarmflow.runtime.replay import (
    adopted_workspace,
    match,
    record_call,
    record_started,
    replay_call,
    schema_of,
)
from swarmflow.runtime.session import AgentSession
from swarmflow.runtime.structured import ask_structured

BOARD_TOOLS = frozenset({"create_thread", "send_message", "wait_for_mention"})
"""A session whose agent has any of these tools is given the run's board."""


async def open_session(
    run: RunContext,
    name: str,
    *,
    scope: Scope | None = None,
    card_vars: dict[str, Any] | None = None,
    workspace: Any = None,
    adopted: Workspace | None = None,
    card: str | None = None,
) -> AgentSession:
    """Check the card variables' handoff, render the card, acquire the workspace.

    `adopted` is this session's own workspace taken over from an interrupted run; `card` the
    role card already rendered from `card_vars` (a journaled call renders it for its key).
    """
    agent = declared_agent(run, name)
    card_vars = card_vars or {}
    system = card if card is not None else _rendered_card(run, agent, card_vars)
    if card_vars or system:
        check_outgoing(
            run, name, system or "", values=card_vars, via="template variable", agent=name
        )
    scope = scope or current_scope()
    borrowed = _borrowed_workspace(run, workspace)
    session = AgentSession(run, agent, scope=scope, system=system, workspace=borrowed)
    session.screen = screen_tool_result  # one function for every session: no closure each
    if borrowed is None and agent.workspace != "none":
        session.workspace = adopted or await _acquire(run, agent, session.id)
        run.workspace_of[session.id] = session.workspace
    if "message_agent" in agent.tools:
        session.messenger = messenger_for(run, session, call_agent)
    if BOARD_TOOLS.intersection(agent.tools):
        from swarmflow.runtime.board import board_for  # only agents with board tools need it

        session.board = board_for(run)
    return session


def _rendered_card(run: RunContext, agent: Agent, card_vars: dict[str, Any]) -> str | None:
    return render_card(agent.card, card_vars, run.card_path) if agent.card else None


def declared_agent(run: RunContext, name: str) -> Agent:
    """The team's agent called `name`; an unknown name names the closest declared one."""
    if not isinstance(name, str) or not run.team.has(name):
        close = difflib.get_close_matches(str(name), run.team.names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        declared = ", ".join(run.team.names) or "no agents"
        raise ConfigError(
            f"unknown agent {name!r}{hint}; the team declares {declared}", agent=str(name)
        )
    return run.team.get(name)


def _borrowed_workspace(run: RunContext, workspace: Any) -> Workspace | None:
    """`workspace=` may name another agent's output (its workspace is reused) or a path."""
    if workspace is None:
        return None
    if isinstance(workspace, AgentOutput):
        found = run.workspace_of.get(workspace.session)
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
    if run.workspaces is None:
        raise ConfigError(
            f"agent {agent.name!r} wants a {agent.workspace!r} workspace but the run has no "
            "workspace provider (pass repo= to run())",
            agent=agent.name,
        )
    return await run.workspaces.acquire(agent.workspace, agent.name, session)


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
    node = run.graph.open("agent", parent.branch, parent.node, name)
    scope = Scope(parent.branch, parent.ledger, node)
    token = set_scope(scope)
    status = "failed"
    try:
        declared_agent(run, name)
        text = render_prompt(prompt)
        check_outgoing(run, name, text, values=prompt, via="prompt", agent=name)
        if run.journal is not None:
            result = await journaled_call(
                run, scope, name, text, output=output, workspace=workspace, card_vars=card_vars
            )
        else:
            result = await _call(
                run, name, text, output=output, workspace=workspace, card_vars=card_vars
            )
        status = "ok"
        return result
    finally:
        reset_scope(token)
        run.graph.close(node, status)


async def _call(
    run: RunContext,
    name: str,
    text: str,
    *,
    output: type[BaseModel] | None,
    workspace: Any,
    card_vars: dict[str, Any],
    card: str | None = None,
    journaled: tuple[CallKey, Workspace | None] | None = None,
) -> AgentOutput:
    adopted = journaled[1] if journaled else None
    session = await open_session(
        run, name, card_vars=card_vars, workspace=workspace, adopted=adopted, card=card
    )
    try:
        if journaled is not None:
            record_started(run, journaled[0], session)
        if output is None:  # a fresh session has no other caller to serialise with
            await session.turn_unlocked(text)
            value = None
        else:
            value = await ask_structured(session, text, output)
        owned = workspace is None and session.workspace is not None
        patch = await _finalize(run, session) if owned else None
    finally:
        session.close()
    result = finish_output(run, session, text, value, patch)
    if journaled is not None:
        record_call(run, journaled[0], session, result, text)
    return result


def journaled_call(
    run: RunContext,
    scope: Scope,
    name: str,
    text: str,
    *,
    output: type[BaseModel] | None,
    workspace: Any,
    card_vars: dict[str, Any],
) -> Coroutine[Any, Any, AgentOutput]:
    """`_call`, keyed in the journal: replayed when a finished record matches, else recorded.

    Not `async def`: it returns the coroutine that does the call (its lookup needs no await),
    so a branch in flight keeps one frame fewer.
    """
    assert run.journal is not None
    agent = run.team.get(name)
    system = _rendered_card(run, agent, card_vars)
    key = run.journal.key(scope.branch, name, digest_of(system or "", text, schema_of(output)))
    resuming = run.journal.previous is not None
    record = match(run, run.journal, key) if resuming else None
    if record is not None:
        return replay_call(run, scope, agent, key, record, output=output)
    call = partial(
        _call, run, name, text, output=output, workspace=workspace, card_vars=card_vars,
        card=system,
    )  # fmt: skip
    if resuming and workspace is None and agent.workspace == "worktree":
        return _adopting_call(run, agent, key, call)
    return call(journaled=(key, None))


async def _adopting_call(
    run: RunContext, agent: Agent, key: CallKey, call: Callable[..., Awaitable[AgentOutput]]
) -> AgentOutput:
    """A restarted call takes over the worktree its interrupted run left, if there is one."""
    adopted = await adopted_workspace(run, agent, key)
    return await call(journaled=(key, adopted))


async def _finalize(run: RunContext, session: AgentSession) -> Patch | None:
    """Commit the session's own workspace and record the change."""
    if session.workspace is None:
        return None
    lines = session.last_text.strip().splitlines()
    summary = lines[0][:72] if lines else "work"
    run.write_ahead()  # a commit is an external effect
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
    sources = session.provenance
    out = AgentOutput(
        agent=session.agent.name,
        session=session.id,
        text=SourcedStr(session.last_text, sources),
        value=value,
        patch=patch,
        usage=session.usage,
        state=session.state.value,
        reason=(session.reason or EndReason.COMPLETED).value,
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
