"""A Team run (OpenCollab's Team controller): one long-lived session per role.

Every role's session is opened when the team starts and closed when it ends, so a role keeps
its history across every message it answers. The lead gets the task; from there the model
routes the work: `message_agent(to, text)` runs a turn of the recipient's own session inside
the sender's tool call (the edge and handoff checks of `runtime.messaging` first) and hands
its answer back. Turns on one session are serialised by its turn lock.

Roles also talk on a board of the team's own (`RunBoards.open_team`: another team of the same
run, in parallel or later, has another board and never sees this one's threads or mentions);
every role has a listener task (`teams.team_board`) that, while the role is idle, waits for a
mention without spending a step and then wakes it.

A message that would wait on its own sender (a -> b while b waits on a, directly or along a
chain) can never be answered, so it is refused and the sender told why; so is a message to a
role that crashed, and one to a role parked in `wait_for_mention` (mention it instead). The
team ends when the lead submits, when the lead crashes, when every role is idle or parked in
`wait_for_mention` with nothing pending for anyone, or when its time runs out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

import anyio

from swarmflow.core.errors import SwarmflowError
from swarmflow.core.output import AgentOutput, SourcedStr
from swarmflow.core.secrets import preview
from swarmflow.core.states import BUDGET_REASONS, EndReason, SessionState
from swarmflow.record.events import TeamEnded
from swarmflow.runtime.context import RunContext, Scope
from swarmflow.sessions.call import declared_agent, finish_output, open_session
from swarmflow.sessions.messaging import messenger_for
from swarmflow.sessions.session import AgentSession
from swarmflow.teams.board import boards_of
from swarmflow.teams.result import Listen, RoleReport, TeamEnd, TeamResult
from swarmflow.teams.team_board import Hearing, TeamBoard

_ANSWER_PREVIEW = 2000
_LIMIT_ENDS: dict[EndReason, TeamEnd] = {
    **dict.fromkeys(BUDGET_REASONS, "budget exhausted"),
    EndReason.STEP_LIMIT: "step limit reached",
    EndReason.WALL_CLOCK: "wall clock",
}
"""The lead's last end reason that names why an idle team stopped short of submitting."""


@dataclass(frozen=True, slots=True)
class TeamPlan:
    """What `team(...)` asked for, checked by the operator."""

    lead: str
    roles: tuple[str, ...]
    listen: dict[str, Listen]
    seconds: float | None = None


@dataclass(slots=True)
class _Tally:
    """The team's moving parts: turns in flight, who waits on whom, who crashed."""

    busy: int = 0
    """Turns started (or waiting for their session's lock) and not finished."""
    waiting_on: dict[str, str] = field(default_factory=dict)
    """sender -> recipient while a `message_agent` call waits for its answer."""
    failures: dict[str, str] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    messages: int = 0


class TeamRun:
    """Opens the role sessions, gives the lead the task, and watches for the end."""

    def __init__(self, run: RunContext, scope: Scope, plan: TeamPlan) -> None:
        self.run = run
        self.scope = scope
        self.plan = plan
        self.sessions: dict[str, AgentSession] = {}
        self.tally = _Tally(turns=dict.fromkeys(plan.roles, 0))
        self.reason: TeamEnd | None = None
        self._ended = anyio.Event()
        self._stirred = anyio.Event()
        """Set (and replaced) whenever a turn ends: listeners with nothing new look again."""
        board = boards_of(run).open_team(scope.branch)
        self.board = TeamBoard(board, self._check_quiet)
        self.hearing = Hearing(board, plan.listen)

    # -- the run ---------------------------------------------------------------------------

    async def run_team(self, task: str) -> TeamResult:
        """Run the team on `task` until it ends; the sessions are closed on every way out."""
        try:
            await self._open()
            await self._work(task)
        finally:
            for session in self.sessions.values():
                session.close()
        return self._result()

    async def _work(self, task: str) -> None:
        with anyio.move_on_after(self.plan.seconds or float("inf")) as deadline:
            async with anyio.create_task_group() as tg:
                # The task first: a resumed team's lead takes its task before any mention
                # that woke it later in the first run (`Board.wake_again`).
                tg.start_soon(self._turn, self.plan.lead, task)
                for name in self.plan.roles:
                    tg.start_soon(self._listen, name)
                await self._ended.wait()
                tg.cancel_scope.cancel()
        if deadline.cancelled_caught:  # the turns it cancelled may have ended it as "idle"
            self.reason = "wall clock"

    async def _open(self) -> None:
        for name in self.plan.roles:
            passive = self.plan.listen[name] == "passive"
            self.sessions[name] = await open_session(
                self.run,
                declared_agent(self.run, name),
                scope=self.scope,
                messenger=messenger_for(self.run, self._deliverer(name), self.refusal),
                board=self.board,
                hear=partial(self.hearing.hear, name) if passive else None,
            )

    def _end(self, reason: TeamEnd) -> None:
        if self.reason is None:
            self.reason = reason
            self._ended.set()

    # -- turns -----------------------------------------------------------------------------

    async def _turn(self, name: str, text: str | Callable[[], str]) -> AgentSession:
        """One turn of role `name`'s session, counted while it waits and runs.

        `text` may be a function, called once the session is free: "" skips the turn.
        """
        session = self.sessions[name]
        self.tally.busy += 1
        try:
            async with session.turn_lock:
                content = text if isinstance(text, str) else text()
                if content:
                    self.tally.turns[name] += 1
                    await self.run.deps.take_turn(session, content, None)
        finally:
            self.tally.busy -= 1
            self._after_turn(session)
        return session

    async def _listen(self, name: str) -> None:
        """While `name` is idle, wait for a mention without spending a step; then wake it."""
        board = self.hearing.board
        while name not in self.tally.failures:
            await board.wait_pending(name)
            if self.hearing.deliverable(name):
                await self._turn(name, partial(self.hearing.wake_text, name))
            else:  # told already and ignored it: wait until something changes
                await self._stirred.wait()

    def _after_turn(self, session: AgentSession) -> None:
        """Record a crash; end the team when the lead submitted or crashed, or all is quiet."""
        name = session.agent.name
        if session.state is SessionState.ERROR:
            self.tally.failures[name] = session.detail
            if name == self.plan.lead:
                self._end("lead failed")
        elif name == self.plan.lead and session.reason is EndReason.SUBMITTED:
            self._end("submitted")
        self._stirred.set()
        self._stirred = anyio.Event()
        self._check_quiet()

    def _check_quiet(self) -> None:
        """End as idle when every turn in flight is parked in a wait and nothing is pending."""
        if self.tally.busy != self.board.parked_total:
            return
        live = [n for n in self.plan.roles if n not in self.tally.failures]
        if not any(self.hearing.deliverable(name) for name in live):
            self._end(self._idle_reason())

    def _idle_reason(self) -> TeamEnd:
        reason = self.sessions[self.plan.lead].reason
        return _LIMIT_ENDS.get(reason, "idle") if reason is not None else "idle"

    # -- messages --------------------------------------------------------------------------

    def refusal(self, sender: str, to: str) -> str:
        """Why the team refuses `sender -> to` (checked before the topology), or ""."""
        if to not in self.sessions:
            return f"{to!r} is not a member of this team ({', '.join(self.plan.roles)})"
        if to in self.tally.failures:
            return f"{to!r} is out of the team: it failed ({self.tally.failures[to]})"
        if self.board.parked.get(to):
            return f"{to!r} is listening on the board (wait_for_mention): @mention it instead"
        hop: str | None = to
        while hop is not None:
            if hop == sender:
                return (
                    f"{to!r} is waiting for your answer, so it cannot answer a message now; "
                    "give it your answer instead"
                )
            hop = self.tally.waiting_on.get(hop)
        return ""

    def _deliverer(self, sender: str) -> Callable[[str, SourcedStr], Awaitable[AgentOutput]]:
        async def deliver(to: str, text: SourcedStr) -> AgentOutput:
            self.tally.waiting_on[sender] = to
            try:
                session = await self._turn(to, f"Message from {sender}:\n{text}")
            finally:
                del self.tally.waiting_on[sender]
            self.tally.messages += 1
            return finish_output(self.run, session, text, None, None)  # raises for a failure

        return deliver

    # -- the result ------------------------------------------------------------------------

    def _result(self) -> TeamResult:
        lead = self.sessions[self.plan.lead]
        answer = lead.last_text
        # The lead's answer is its product, fingerprinted like any agent output; a failure
        # is already the team's end reason and the role's report.
        with contextlib.suppress(SwarmflowError):
            finish_output(self.run, lead, "", None, None)
        reason = self.reason or "idle"
        roles = {name: self._report(name) for name in self.plan.roles}
        self.run.deps.log.emit(
            TeamEnded,
            branch=self.scope.branch,
            agent=self.plan.lead,
            reason=reason,
            roles=list(self.plan.roles),
            failed=sorted(self.tally.failures),
            messages=self.tally.messages,
            answer=preview(answer, _ANSWER_PREVIEW),
        )
        return TeamResult(
            answer=answer,
            reason=reason,
            lead=self.plan.lead,
            roles=roles,
            messages=self.tally.messages,
        )

    def _report(self, name: str) -> RoleReport:
        session = self.sessions[name]
        usage = session.usage
        return RoleReport(
            name=name,
            turns=self.tally.turns[name],
            steps=session.steps,
            tokens_in=usage.input,
            tokens_out=usage.output,
            state=session.state.value,
            reason=(session.reason or EndReason.COMPLETED).value,
            detail=session.detail,
            failed=name in self.tally.failures,
            listen=self.plan.listen[name],
        )
