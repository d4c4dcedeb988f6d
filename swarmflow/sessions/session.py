"""One agent's conversation: a checked state machine running the inner and outer loops.

Inner loop, one step per model call: precheck the step limit, drain the inbox and build the
request (`sessions.requests`), make the metered call (`calls.metered`: reserve, rails, write
barrier, journal, model, settle), run the tool calls, record the observations. It ends at a
final answer, at `submit`, or at a limit. The outer loop asks the agent's goal
evaluators whether a finished round completes the task, needs another round, or is blocked.
Rails run at seven hooks; `swarmflow.runtime.rails` says what a veto and an amend do
at each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from typing import Any

import anyio

from swarmflow.calls.ledgers import charged_ledgers
from swarmflow.calls.metered import (
    Called,
    Caller,
    metered_call,
    over_step_limit,
    rails_at,
    session_purpose,
)
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import Message, ModelResponse, ToolCall, Usage
from swarmflow.core.ports import Workspace
from swarmflow.core.secrets import preview
from swarmflow.core.states import EndReason, SessionState, check_transition, end_state_for
from swarmflow.core.team import Agent
from swarmflow.core.tokens import message_units
from swarmflow.record.eventlog import EventsAs
from swarmflow.record.events import (
    AgentFinished,
    CacheBust,
    EventBase,
    GoalEvaluated,
    SessionEnded,
    SessionStarted,
    SessionTold,
)
from swarmflow.runtime.context import RunContext, Scope, current_session
from swarmflow.runtime.rails import Hook, Verdict
from swarmflow.sessions.goals import GoalView, evaluate_goals
from swarmflow.sessions.parts import Finish, cancel_reason, describe
from swarmflow.sessions.profile import agent_profile
from swarmflow.sessions.requests import Requests, drain_inbox
from swarmflow.sessions.toolrun import ToolRunner, unanswered
from swarmflow.sessions.wiring import ALONE, Collaborators, open_inbox, posting, tool_runner

TOLD_PREVIEW = 1000
"""How much of a told message its `session_told` event shows."""


Messenger = Callable[["AgentSession", str, str], Awaitable[str]]
"""Delivers a `message_agent` call (sender, recipient, text) and returns the answer."""


class AgentSession:
    """A stateful session of one declared agent."""

    # Slots: thousands of sessions can be in flight at once in a fan-out.
    __slots__ = (
        "__weakref__",
        "_lock",
        "_rails",
        "_collaborators",
        "_runner",
        "agent",
        "caller",
        "closed",
        "cost",
        "detail",
        "error",
        "events",
        "hear",
        "history",
        "history_units",
        "inbox",
        "id",
        "model",
        "profile",
        "last_text",
        "reason",
        "requests",
        "run",
        "scope",
        "screen",
        "state",
        "steps",
        "system",
        "told",
        "usage",
        "workspace",
    )

    def __init__(
        self,
        run: RunContext,
        agent: Agent,
        *,
        scope: Scope,
        system: str | None,
        session_id: str | None = None,
        collaborators: Collaborators = ALONE,
    ) -> None:
        profile = agent_profile(run, agent)
        self.run = run
        self.agent = agent
        self.id = session_id or new_session_id(agent.name)
        self.scope = scope
        self.workspace = collaborators.workspace
        self.profile = profile
        self.model = profile.model
        """What every session of its agent shares in the run: model, price, tool schemas."""
        self.events = EventsAs(run.deps.log, agent.name, self.id, scope.branch)
        """What its parts record events through (holds the log, not the session: no cycle)."""
        self.state = SessionState.IDLE
        self.reason: EndReason | None = None
        self.detail = ""
        self.error: BaseException | None = None
        self.history: list[Message] = []
        self.history_units = 0
        self.system = system
        self.steps = 0
        self.usage = Usage()
        self.cost = 0.0
        """What this session's model calls were charged, as settled on its ledgers."""
        self.last_text = ""
        self.told: list[str] = []
        """The messages told (`tell`) since the last turn began: a journaled turn's key
        digests them, since its answer depends on them."""
        self.closed = False
        self.screen = collaborators.screen
        self.hear = collaborators.hear
        self.inbox = open_inbox(self, collaborators.hear)
        """Evidence from the rest of the run, given at the next step boundary."""
        self._lock: anyio.Lock | None = None  # made on first use; one-shot calls never lock
        self._rails = bool(run.deps.rails)
        self.caller = Caller(
            run,
            agent.name,
            self.id,
            scope.branch,
            charged_ledgers(run, scope.ledger, agent),
            profile.price,
            self.events,
            session_purpose.get(),
            agent.max_steps,
        )
        """Who this session's model calls are made as (`calls.metered`)."""
        self.requests = Requests(profile, system)
        """How its requests are laid out and kept within the context budget."""
        self._collaborators = collaborators
        self._runner: ToolRunner | None = None
        """Made at the first tool round (`runner`): most sessions of a fan-out never call one."""
        self.emit(SessionStarted, model=self.profile.model_name, tools=profile.tools)
        run.state.sessions.add(self)

    # -- plumbing ---------------------------------------------------------------------------

    def emit(self, cls: type[EventBase], **fields: object) -> None:
        """Record an event with this session's envelope."""
        self.events.record(cls, fields)

    def to(self, target: SessionState) -> None:
        """Move to `target`, a legal transition (`core.states`)."""
        check_transition(self.state, target)
        self.state = target

    def end(self, reason: EndReason, detail: str = "") -> None:
        """End the turn: the end state `reason` leads to."""
        self.to(end_state_for(reason))
        self.reason = reason
        self.detail = detail

    def wait_for_teammate(self) -> None:
        """A tool call is waiting on another agent (`message_agent`)."""
        self.to(SessionState.WAITING)

    def resume_tools(self) -> None:
        if self.state is SessionState.WAITING:
            self.to(SessionState.RUNNING_TOOLS)

    def append(self, message: Message) -> None:
        """Add `message` to the conversation."""
        self.history.append(message)
        self.history_units += message_units(message)

    def _answer_open_calls(self, why: str) -> None:
        """Answer the last response's tool calls that have no observation (`unanswered`)."""
        for note in unanswered(self.history, why):
            self.append(note)

    def move_to(self, workspace: Workspace) -> None:
        """Work on in `workspace` from now on (a resumed session takes over the worktree its
        replayed turns edited); its tools see the new one."""
        if (old := posting(self.workspace)) is not None:
            old.unsubscribe(self.id)
        self.workspace = workspace
        self.runner.context.workspace = workspace  # made first, as it was, if not yet
        if (new := posting(workspace)) is not None:
            new.subscribe(self.inbox)

    @property
    def runner(self) -> ToolRunner:
        """The runner of this session's tool calls, with the context its tools see."""
        if self._runner is None:
            given = self._collaborators
            self._runner = tool_runner(self, given.messenger, given.board)
        return self._runner

    # -- a turn -----------------------------------------------------------------------------

    @property
    def turn_lock(self) -> anyio.Lock:
        """The session's one turn lock: `turn` takes it; hold it to run several turns in a row.

        `fast_acquire`: a free lock is taken without yielding to the event loop (a cancelled
        caller is still refused at once); a turn yields at its model call anyway, and the
        extra loop pass cost about a fifth of a turn.
        """
        if self._lock is None:
            self._lock = anyio.Lock(fast_acquire=True)
        return self._lock

    def tell(self, content: str) -> None:
        """Add a user message without a turn: no model call, no reservation. The next turn's
        request carries it after everything before it, so the prompt's prefix stays the same.

        The caller holds `turn_lock`: a message must not land inside a turn in flight
        (between a tool call and its result). It passes no `turn_start` rail, since no turn
        starts; the next call's `before_model_call` rails see it in the request.
        """
        self.append(Message("user", content))
        self.told.append(content)
        self.emit(SessionTold, text=preview(content, TOLD_PREVIEW))

    async def turn(self, content: str) -> str:
        """Run one turn on a user message; concurrent turns on one session are serialised."""
        async with self.turn_lock:
            return await self.turn_unlocked(content)

    async def turn_unlocked(self, content: str) -> str:
        """Run one turn; the caller holds `turn_lock` or owns the session alone."""
        if self.state.is_end:
            self.to(SessionState.IDLE)
        self.error = None
        self.told.clear()  # this turn carries them
        token = current_session.set(self)
        try:
            # The round trip is written out here, not in a method of its own: every session
            # of a fan-out holds its turn's frames while it waits, one fewer is less memory.
            verdict = await self._rails_at(Hook.TURN_START, content) if self._rails else None
            if verdict is not None and verdict.veto is not None:
                self._vetoed(Hook.TURN_START, verdict)
                finish = None
            else:
                self.append(Message("user", content if verdict is None else verdict.payload))
                finish = await (self._outer_loop() if self.profile.goals else self._inner_loop())
            if self._rails:
                await self._finish_turn(finish)
            else:  # no turn_end rail to ask: no coroutine to make
                self._answered(finish, finish.text if finish is not None else self.last_text)
        except anyio.get_cancelled_exc_class():
            self.end(cancel_reason(self.run), "cancelled from outside the session")
            self._answer_open_calls("the turn was cancelled before this call finished")
            raise
        except Exception as exc:  # an unhandled fault ends the session in error
            self._answer_open_calls("the turn failed before this call finished")
            await self._fault(exc)
        finally:
            current_session.reset(token)
        self.emit(
            AgentFinished,
            produced_content=bool(self.last_text.strip()),
            preview=self.last_text[:1000],
        )
        return self.last_text

    async def _finish_turn(self, finish: Finish | None) -> None:
        """Let the turn_end rails see the answer, then record how the turn ended.

        `finish` is None when the turn already ended at a limit, a veto or a fault.
        """
        answer = finish.text if finish is not None else self.last_text
        verdict = await self._rails_at(Hook.TURN_END, answer)
        if verdict.veto is not None:
            self.last_text = ""
            if finish is not None:
                self._vetoed(Hook.TURN_END, verdict)
            return
        self._answered(finish, verdict.payload)

    def _answered(self, finish: Finish | None, answer: str) -> None:
        """Take `answer` as the turn's, and end the session as `finish` says."""
        self.last_text = answer
        if finish is not None:
            self.end(finish.reason)

    async def _fault(self, exc: Exception) -> None:
        """End in error; the on_error rails may replace the error the caller sees."""
        self.error = exc
        if not self.state.is_end:
            self.end(EndReason.ERROR, describe(exc))
        try:
            verdict = await self._rails_at(Hook.ON_ERROR, exc, error=exc)
        except Exception as rail_exc:  # a failing error rail must not hide the first fault
            self.detail += f"; on_error rail failed: {rail_exc}"
            return
        if verdict.veto is None and verdict.payload is not exc:
            self.error = verdict.payload
            self.detail = describe(verdict.payload)

    async def _outer_loop(self) -> Finish | None:
        rounds = 0
        while True:
            finish = await self._inner_loop()
            if finish is None:
                return None
            self.last_text = finish.text
            rounds += 1
            view = GoalView(self.agent.name, self.id, finish.text, tuple(self.history), rounds)
            name, decision, note = await evaluate_goals(self.profile.goals, view)
            self.emit(GoalEvaluated, evaluator=name, decision=decision, note=note)
            if decision == "complete":
                return finish
            if decision == "blocked":
                self.end(EndReason.GOAL_BLOCKED, note)
                return None
            if rounds >= self.agent.max_goal_rounds:
                detail = f"goal not met after {rounds} rounds: {note}"
                self.end(EndReason.GOAL_ROUND_LIMIT, detail)
                return None
            self.append(Message("user", f"The goal is not met yet: {note}\nContinue."))

    # -- the inner loop ---------------------------------------------------------------------

    async def _inner_loop(self) -> Finish | None:
        while True:
            self.to(SessionState.PRECHECK)
            limit = over_step_limit(self.steps, self.agent.max_steps)
            if limit is not None:  # before the request is built: compaction costs a call
                self.end(EndReason.STEP_LIMIT, limit)
                return None
            drain_inbox(self)
            request = await self.requests.build(self)
            self.to(SessionState.CALLING_MODEL)
            # The metered call awaited here, not in a method of its own: one frame fewer held
            # by every session that waits on its model.
            called = await metered_call(
                self.caller,
                self.model,
                request,
                steps=self.steps,
                sent_units=self.requests.sent_units,
                measure=self.requests.prefix.measure,
            )
            response = self._took(called)
            if response is None:
                return None
            if not response.tool_calls:
                return Finish(EndReason.COMPLETED, response.text or "")
            self.to(SessionState.RUNNING_TOOLS)
            finish = await self._run_tools(response.tool_calls)
            if finish is not None or self.state.is_end:
                return finish

    def _took(self, called: Called) -> ModelResponse | None:
        """Take in one metered model call (`calls.metered`); None when the session ended on
        the way."""
        if (bust := self.requests.prefix.bust) is not None and called.payment == "paid":
            self.emit(CacheBust, step=self.steps + called.calls, **asdict(bust))
        self.steps += called.calls
        self.usage += called.usage
        self.cost += called.cost
        response, refusal = called.response, called.refusal
        if refusal is not None or response is None:
            if refusal is not None:
                self.error = refusal.error or self.error
                self.end(refusal.reason, refusal.detail)
            return None
        self.append(Message("assistant", response.text, tuple(response.tool_calls)))
        if response.text:
            self.last_text = response.text
        if called.over:
            over = ", ".join(called.over)
            self.end(EndReason.BUDGET_EXCEEDED_AFTER_CALL, f"over the limit of {over}")
            return None
        return response

    async def _run_tools(self, calls: Sequence[ToolCall]) -> Finish | None:
        """Run the calls and record their observations; a submission finishes the round."""
        done = await self.runner.run_all(calls)
        screen = self.screen
        run, name = self.run, self.agent.name
        for observation in done.observations:
            self.append(observation if screen is None else screen(run, name, observation))
        self._answer_open_calls("the turn ended before this call ran")
        if done.submitted is not None:
            return Finish(EndReason.SUBMITTED, done.submitted)
        if done.loop is not None:
            self.end(EndReason.LOOP_BLOCK, done.loop)
        return None

    # -- rails ------------------------------------------------------------------------------

    async def _rails_at(
        self, hook: Hook, payload: Any, error: BaseException | None = None
    ) -> Verdict:
        """Run the rails visible to this agent at `hook`, recording a veto."""
        if not self._rails:
            return Verdict(payload)
        return await rails_at(self.caller, hook, payload, self.steps, error)

    def _vetoed(self, hook: Hook, verdict: Verdict) -> None:
        reason = verdict.veto.reason if verdict.veto is not None else ""
        self.end(EndReason.VETOED, f"rail {verdict.rail!r} vetoed {hook.value}: {reason}")

    # -- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """End the session for good and record how it ended."""
        if self.closed:
            return
        self.closed = True
        self.run.state.sessions.discard(self)
        if (shared := posting(self.workspace)) is not None:  # its reservations end with it
            shared.unsubscribe(self.id)
        if self.state is SessionState.IDLE:
            self.end(EndReason.COMPLETED, "closed before any turn")
        elif not self.state.is_end:  # closed from outside mid-turn: the cancellation escape
            self.end(EndReason.CANCELLED, self.detail or "closed before its turn finished")
        reason = self.reason or EndReason.COMPLETED
        self.emit(
            SessionEnded,
            state=str(self.state),  # a StrEnum's value: `.value` is a property written in Python
            reason=str(reason),
            detail=self.detail,
            steps=self.steps,
            tokens=self.usage.total,
        )
