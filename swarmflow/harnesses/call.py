"""A harness agent's call: its session opened as any agent call's, its work done by the program.

The composition root makes `dispatch_call` the run's agent caller when the team has a harness
agent: a call of such an agent goes to `run_harness_call`, or to the journaled call with
`work_harness` as its work (`durable.journaled`), so it is keyed, recorded and replayed
exactly like a native call. The call opens its session as a native one does (the card's and
prompt's handoff checks, the workspace, a worktree for a coder), runs the program in it
(`running.run_harness`), commits the workspace, and returns an `AgentOutput` whose text is
the program's answer and whose patch is the workspace's diff, with the agent's provenance:
a downstream agent is handed either only along a declared edge.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from swarmflow.core.errors import ConfigError
from swarmflow.core.output import AgentOutput
from swarmflow.harnesses.running import run_harness
from swarmflow.runtime.context import RunContext, Scope
from swarmflow.runtime.deps import AgentCaller, CallRequest
from swarmflow.sessions.call import finalize_workspace, finish_output, open_call
from swarmflow.sessions.session import AgentSession


async def dispatch_call(
    run: RunContext,
    scope: Scope,
    request: CallRequest,
    *,
    native: AgentCaller,
    harness: AgentCaller,
) -> AgentOutput:
    """The agent call: `harness` for an agent that declares one, `native` for the rest."""
    chosen = native if request.agent.harness is None else harness
    return await chosen(run, scope, request)


def harness_caller(
    native: AgentCaller, journaled: Callable[..., Awaitable[AgentOutput]] | None
) -> AgentCaller:
    """The run's agent caller for a team with harness agents; `journaled` is the journaled
    call taking a `work=` function, when the run keeps a journal."""
    harness = run_harness_call if journaled is None else partial(journaled, work=work_harness)
    return partial(dispatch_call, native=native, harness=harness)


async def run_harness_call(run: RunContext, scope: Scope, request: CallRequest) -> AgentOutput:
    """One harness call, unjournaled."""
    session = await open_call(run, scope, request)
    return await work_harness(run, session, request)


async def work_harness(run: RunContext, session: AgentSession, request: CallRequest) -> AgentOutput:
    """Run the program on the session, commit its own workspace, close it, and return the
    product (or raise for a failed or stopped call, the product attached)."""
    harness = session.agent.harness
    assert harness is not None  # dispatch_call sends only harness agents here
    try:
        if request.output is not None:
            raise ConfigError(
                f"agent {session.agent.name!r} runs a harness, which answers in text: call it "
                "without output= and parse its answer",
                agent=session.agent.name,
            )
        # A program has no role card of its own to take: the card leads its task.
        task = f"{session.system}\n\n{request.text}" if session.system else request.text
        await run_harness(session, harness, task)
        owned = request.workspace is None and session.workspace is not None
        patch = await finalize_workspace(run, session) if owned else None
    finally:
        session.close()
    return finish_output(run, session, request.text, None, patch)
