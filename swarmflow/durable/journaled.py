"""The journaled agent call: the layer that wraps `sessions.call.run_call` in a journaled run.

The composition root makes it the run's agent caller when the run keeps a journal, so the
plain call knows nothing of journals. A call whose key matches a finished record is replayed
(no model call, the recorded spend charged back); otherwise the call runs, its workspace is
journaled before its first model call (`call_started`), and its product after
(`call_finished`). A call that was in flight when its process died runs again in the worktree
it had (its own, or one it borrowed), put back at the commit the call started from.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from swarmflow.core.output import AgentOutput
from swarmflow.durable.replay import (
    adopted_workspace,
    given_here,
    match,
    record_call,
    record_started,
    replay_call,
    restart_in_flight,
    schema_of,
)
from swarmflow.record.journal import digest_of
from swarmflow.runtime.context import RunContext, Scope
from swarmflow.runtime.deps import CallRequest
from swarmflow.sessions.call import open_call, rendered_card, work_call
from swarmflow.sessions.session import AgentSession

Work = Callable[[RunContext, AgentSession, CallRequest], Awaitable[AgentOutput]]
"""Works an opened call's session to its product (`sessions.call.work_call`)."""


async def journaled_call(
    run: RunContext, scope: Scope, request: CallRequest, *, work: Work = work_call
) -> AgentOutput:
    """`run_call`, keyed in the journal: replayed when a finished record matches, else run
    and recorded. `work` does the call's work on its opened session (a harness agent's
    call gives `harnesses.call.work_harness`)."""
    journal = run.deps.journal
    assert journal is not None  # the composition root chooses this layer for journaled runs
    agent = request.agent
    card = rendered_card(run, agent, request.card_vars)
    digest = digest_of(card or "", request.text, schema_of(request.output))
    key = journal.key(scope.branch, agent.name, digest)
    resuming = journal.previous is not None
    record = match(run, journal, key) if resuming else None
    if record is not None:
        given = given_here(card, request.text)
        return await replay_call(run, scope, agent, key, record, output=request.output, given=given)
    started = journal.in_flight(key) if resuming else None
    owns_worktree = request.workspace is None and agent.workspace == "worktree"
    adopted = await adopted_workspace(run, agent, started) if owns_worktree else None
    session = await open_call(run, scope, request, card=card, adopted=adopted)
    # Most calls have no worktree and no earlier start: neither step is awaited for them.
    if started is not None:
        await restart_in_flight(run, session, started, owned=owns_worktree)
    if session.workspace is not None:
        await record_started(run, key, session)
    result = await work(run, session, request)
    record_call(run, key, session, result, request.text)
    return result
