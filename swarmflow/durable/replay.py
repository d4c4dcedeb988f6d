"""Journaled calls: record each finished agent call and session turn, replay them on resume.

A call's key is its branch, its index in that branch, the agent and a digest of what was sent
(the rendered role card, the prompt, the output schema). On resume a call whose key matches a
finished record returns the recorded product at once: no model call, no tokens, the recorded
spend charged back to the ledgers below the run's (the run's own counts every model call of
the earlier processes from their log, `durable.interrupted.resumed`), so that budgets continue
from what was spent.

Records are written from their plain fields (`Journal.write`, the hot dataclasses through
`record.records`' `*_fields`, a patch and a structured value as they are) and read back into
the same types (`record.records`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from swarmflow.calls.ledgers import charge_recorded, charged_ledgers
from swarmflow.core.budget import Charge, Ledger
from swarmflow.core.errors import ConfigError, ResumeDiverged
from swarmflow.core.experience_port import RecordedTrajectory
from swarmflow.core.fingerprint import GivenText
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import Message, Usage
from swarmflow.core.output import AgentOutput, SourcedStr
from swarmflow.core.ports import Workspace
from swarmflow.core.states import EndReason, SessionState
from swarmflow.core.team import Agent
from swarmflow.record.events import CallReplayed, ResumeDivergedAt
from swarmflow.record.journal import CallKey, Journal, Record, digest_of
from swarmflow.record.records import (
    CallFinished,
    CallStarted,
    Spend,
    WorktreeAt,
    message_fields,
    spend_fields,
    usage_fields,
)
from swarmflow.runtime.context import RunContext, Scope
from swarmflow.sessions.handoff import remember_output, screen_history
from swarmflow.sessions.session import AgentSession
from swarmflow.sessions.structured import output_schema, take_turn


def schema_of(output: type[BaseModel] | None) -> str:
    """What a call's key digests of its output type ("" for a plain text answer)."""
    return "" if output is None else output_schema(output).canonical


def match(run: RunContext, journal: Journal, key: CallKey) -> Record | None:
    """The record `key` replays; records (or refuses, when strict) a divergence."""
    record = journal.match(key)
    if record is None and journal.diverged is key:
        where = key.where()
        run.deps.log.emit(
            ResumeDivergedAt,
            agent=key.agent,
            branch=key.branch,
            index=key.place,
            digest=key.digest,
            strict=journal.strict,
        )
        if journal.strict:
            raise ResumeDiverged(
                f"the flow no longer matches its journal at {where}: what is sent there "
                "changed since the run was interrupted (resume without --strict to re-run "
                "from that call on)",
                agent=key.agent,
            )
    return record


# -- agent calls ------------------------------------------------------------------------------


async def replay_call(
    run: RunContext,
    scope: Scope,
    agent: Agent,
    key: CallKey,
    record: Record,
    *,
    output: Any,
    given: GivenText,
) -> AgentOutput:
    """The recorded product of an agent call, as the call returned it.

    `given` is what this process gives the call (its card and prompt, `given_here`): the
    journal's own `given` and `provenance` are not read, so a record changed on disk cannot
    make the agent the owner of what it was never given (the handoff rule's fingerprints).
    """
    data = record.data
    session = new_session_id(agent.name)
    sources = frozenset((agent.name,))  # what a session produces is its agent's, always
    if data.workspace is not None:
        run.state.workspace_of[session] = await reattach(run, agent, session, data.workspace)
    charge_spent(run, scope, agent, data.spend)
    if run.deps.experience is not None and data.trajectory is not None:
        replayed = ReplayedTrajectory(run, agent.name, data.trajectory)
        run.deps.experience.track(agent.name, replayed)  # reflected on at the run's end
    _emit_replayed(run, key, session, data)
    out = AgentOutput(
        agent=agent.name,
        session=session,
        text=SourcedStr(data.text, sources),
        value=recorded_value(data, output),
        patch=data.patch,
        usage=data.usage,
        state=data.state,
        reason=data.reason,
        provenance=sources,
        detail=data.detail,
    )
    remember_output(run, agent.name, out, given)
    return out


_VIA = "recorded trajectory"


class ReplayedTrajectory:
    """A replayed call's session as the run's reflection reads it: as the journal kept it,
    through the handoff gate when it is read (at the run's end, when every product of the run
    is known), since the journal is a file on disk that may have been rewritten."""

    __slots__ = ("_agent", "_recorded", "_run", "_screened")

    def __init__(self, run: RunContext, agent: str, recorded: RecordedTrajectory) -> None:
        self._run, self._agent, self._recorded = run, agent, recorded
        self._screened: list[Message] | None = None

    @property
    def history(self) -> list[Message]:
        if self._screened is None:  # screened once: a refusal is recorded once
            recorded = self._recorded.history
            self._screened = screen_history(self._run, self._agent, recorded, via=_VIA)
        return self._screened

    @property
    def detail(self) -> str:
        return self._recorded.detail


def given_here(card: str | None, prompt: str) -> GivenText:
    """What an agent call is given, as its session would read it: the card, then the prompt."""
    given = GivenText.of(card or "")
    given.extend(prompt)
    return given


def record_call(
    run: RunContext, key: CallKey, session: AgentSession, out: AgentOutput, given: str
) -> None:
    """Journal a call that returned, with everything a resumed run needs to replay it."""
    assert run.deps.journal is not None
    usage = out.usage
    fields: dict[str, object] = {
        "key": key.as_dict(),
        "session": out.session,
        "event_seq": run.deps.log.count,
        "text": str.__str__(out.text),  # a plain str serialises fastest
        "given": given,
        "value": out.value,
        "patch": out.patch,
        "usage": usage_fields(usage),
        "spend": spend_fields(usage, session.cost, session.steps),
        "state": out.state,
        "reason": out.reason,
        "detail": out.detail,
        "provenance": list(out.provenance),
        "workspace": None if session.workspace is None else workspace_info(session.workspace),
    }
    experience = run.deps.experience
    if experience is not None:  # what a resumed run's reflection reads of the session
        brief = experience.brief(session.history)
        fields["trajectory"] = {"history": brief, "detail": session.detail}
    run.deps.journal.write(CallFinished, fields)


async def record_started(run: RunContext, key: CallKey, session: AgentSession) -> None:
    """Before a call's first model call: where its worktree lives and the commit its HEAD is
    at, for a restart in place."""
    info = workspace_info(session.workspace)
    if info is None or run.deps.journal is None:
        return
    head = getattr(session.workspace, "head", None)  # a worktree of swarmflow's own has it
    run.deps.journal.write(
        CallStarted,
        {
            "key": key.as_dict(),
            "session": session.id,
            "workspace": info,
            "head": await head() if callable(head) else "",
        },
    )


async def adopted_workspace(
    run: RunContext, agent: Agent, started: CallStarted | None
) -> Workspace | None:
    """The worktree of this call from a process that died while the call was in flight."""
    if started is None or agent.workspace != "worktree":
        return None
    return await reattach(run, agent, started.session, started.workspace)


async def restart_in_flight(
    run: RunContext, session: AgentSession, started: CallStarted | None, *, owned: bool
) -> None:
    """A call that was in flight when its process died runs again from where it started: its
    worktree (its own, or one it borrowed) goes back to the commit its HEAD was at then, so
    the call is neither confused by its own half-made edits nor loses an earlier call's
    commit; what the interrupted call had done is kept (`WorktreeWorkspace.restart_from`).

    A record from before the start's commit was journaled restarts a call in its own worktree
    at the worktree's base (where every such call starts), and leaves a borrowed one as it is.
    """
    workspace = session.workspace
    if started is None or workspace is None or workspace.kind != "worktree":
        return
    commit = started.head or (started.workspace.base if owned else "")
    if not commit:
        return
    if str(getattr(workspace, "root", "")) != started.workspace.root:
        return  # not the worktree the call had: nothing of its own to undo here
    restart = getattr(workspace, "restart_from", None)
    if restart is not None:
        run.deps.write_ahead()  # resetting a worktree is an external effect
        await restart(commit)


# -- session turns ----------------------------------------------------------------------------


async def journaled_turn(
    session: AgentSession, text: str, output: type[BaseModel] | None
) -> BaseModel | None:
    """`take_turn`, keyed in the journal: replayed when a finished record matches, else
    taken and recorded (the run's `take_turn` when it keeps a journal).

    The messages told to the session since its last turn are part of what the turn sends, so
    the key digests them: a resumed flow that tells something else diverges here. They need
    no record of their own: the resumed flow tells them again, and a told message costs
    nothing.
    """
    run = session.run
    journal = run.deps.journal
    assert journal is not None  # the composition root chooses this layer for journaled runs
    digest = digest_of(session.system or "", *session.told, text, schema_of(output))
    key = journal.key(session.scope.branch, session.agent.name, digest)
    record = match(run, journal, key) if journal.previous is not None else None
    if record is not None:
        _check_recorded_messages(session, key, record, text)
        await _work_on_in_recorded_worktree(session, record.data.workspace)
        return _replay_turn(session, key, record, output)
    before, count = session.history, len(session.history)
    steps, usage, cost = session.steps, session.usage, session.cost
    value = await take_turn(session, text, output)
    if session.state is SessionState.DONE:
        compacted = session.history is not before
        now = session.usage
        spent = Usage(
            now.input - usage.input,
            now.output - usage.output,
            now.cached_input - usage.cached_input,
        )
        journal.write(
            CallFinished,
            {
                "key": key.as_dict(),
                "session": session.id,
                "event_seq": run.deps.log.count,
                "text": session.last_text,
                "reason": (session.reason or EndReason.COMPLETED).value,
                "value": value,
                "messages": [
                    message_fields(m) for m in session.history[0 if compacted else count :]
                ],
                "replace_history": compacted,
                "usage": usage_fields(spent),
                "spend": spend_fields(spent, session.cost - cost, session.steps - steps),
                "workspace": workspace_info(session.workspace),
            },
        )
    return value


async def _work_on_in_recorded_worktree(session: AgentSession, info: WorktreeAt | None) -> None:
    """A session whose turns replay takes over the worktree those turns edited (its own,
    opened afresh in this process, holds none of their work)."""
    own = session.workspace
    if info is None or own is None or session.agent.workspace != "worktree":
        return
    if str(getattr(own, "root", "")) == info.root:
        return
    run = session.run
    recorded = await reattach(run, session.agent, session.id, info)
    session.move_to(recorded)
    run.state.workspace_of[session.id] = recorded


def _check_recorded_messages(
    session: AgentSession, key: CallKey, record: Record, text: str
) -> None:
    """Refuse a recorded turn whose conversation gives the agent what the handoff rule would
    have kept from it: what a session was given (its user messages) is what it may pass on,
    so a record changed on disk must not give it another agent's product without the edge.

    The turn's message and the messages told to it were checked in this process; any other
    (a mention heard, a message delivered during the turn) is checked again here, against
    the products known so far, as it was when it was delivered.
    """
    run, agent = session.run, session.agent.name
    checked = {text, *session.told}
    for message in record.data.messages or ():
        content = message.content
        if message.role != "user" or not content or content in checked:
            continue
        refused = run.state.fingerprints.unreached(
            content, lambda owner: run.deps.team.allows(owner, agent)
        )
        if refused:
            where = run.deps.journal.path if run.deps.journal else "the journal"
            raise ConfigError(
                f"{where}: {key.where()}: a recorded message gives agent {agent!r} a product "
                f"of agent {refused[0]!r}, which has no edge to it; the record was changed "
                "after the run wrote it",
                agent=agent,
            )


def _replay_turn(
    session: AgentSession, key: CallKey, record: Record, output: type[BaseModel] | None
) -> BaseModel | None:
    data = record.data
    _adopt_turn(session, data)
    charge_spent(session.run, session.scope, session.agent, data.spend)
    _emit_replayed(session.run, key, session.id, data)
    value = recorded_value(data, output)
    return value if isinstance(value, BaseModel) else None


def _adopt_turn(session: AgentSession, data: CallFinished) -> None:
    """The session takes over a turn replayed from the journal (no model is called); a turn
    that ended in `submit` ends so again (a Team run's lead reads it)."""
    session.told.clear()  # the recorded turn carried them
    if data.replace_history:
        session.history, session.history_units = [], 0
    for message in data.messages or ():
        session.append(message)
    session.last_text = data.text
    session.steps += data.spend.calls
    session.usage += data.usage
    session.cost += data.spend.cost
    # The recorded turn went precheck -> calling model -> done; the replay walks the same
    # legal path so the session's state is what it would have been.
    if session.state.is_end:
        session.to(SessionState.IDLE)
    session.to(SessionState.PRECHECK)
    session.to(SessionState.CALLING_MODEL)
    submitted = data.reason == EndReason.SUBMITTED.value
    session.end(EndReason.SUBMITTED if submitted else EndReason.COMPLETED)


# -- spend, workspaces, values ----------------------------------------------------------------


def charge_spent(run: RunContext, scope: Scope, agent: Agent, spent: Spend) -> None:
    """Charge a replayed call's recorded spend to the ledgers its calls charge (nothing new is
    spent), except the run's own: that one was charged everything the earlier processes' log
    records (`durable.interrupted.resumed`)."""
    charge_recorded(run, charged_ledgers(run, scope.ledger, agent), spent.charge)


def spend(ledgers: Iterable[Ledger], charge: Charge) -> None:
    """Count spend made before this process (replayed or lost) as spent on `ledgers`."""
    for ledger in ledgers:
        ledger.spent_tokens += charge.tokens
        ledger.spent_cost += charge.cost
        ledger.spent_calls += charge.calls


def workspace_info(workspace: Workspace | None) -> dict[str, str] | None:
    """Where a worktree lives (other workspaces need nothing to be found again)."""
    if workspace is None or workspace.kind != "worktree":
        return None
    names = ("root", "branch", "base")
    if not all(hasattr(workspace, n) for n in names):
        return None
    return {n: str(getattr(workspace, n)) for n in names}


async def reattach(run: RunContext, agent: Agent, session: str, info: WorktreeAt) -> Workspace:
    """The recorded worktree, taken over again by this run as it is (recreated if it was
    removed); the provider checks that it is one of the run's own."""
    provider = run.deps.workspaces
    adopt = getattr(provider, "reattach", None)
    if adopt is None:
        raise ResumeDiverged(
            f"the journal records a worktree for agent {agent.name!r} but this run's "
            "workspace provider cannot take one over (pass the same repo= as the first run)",
            agent=agent.name,
        )
    workspace: Workspace = await adopt(
        agent.name,
        session,
        root=info.root,
        branch=info.branch,
        base=info.base,
    )
    return workspace


def _emit_replayed(run: RunContext, key: CallKey, session: str, data: CallFinished) -> None:
    run.deps.log.emit(
        CallReplayed,
        agent=key.agent,
        session=session,
        branch=key.branch,
        index=key.place,
        digest=key.digest,
        recorded_session=data.session,
    )


def recorded_value(data: CallFinished, output: Any) -> Any:
    """The recorded structured value, as the call's `output=` type (None without one)."""
    if data.value is None or output is None:
        return None
    if isinstance(output, type) and issubclass(output, BaseModel):
        return output.model_validate(data.value)
    return data.value
