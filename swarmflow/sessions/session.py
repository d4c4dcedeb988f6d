"""One agent's conversation: a checked state machine running the inner and outer loops.

Inner loop, one step per model call: precheck limits, build the context, price and reserve the
call, call the model, settle the actual usage, run the tool calls, record the observations.
It ends at a final answer, at `submit`, or at a limit. The outer loop asks the agent's goal
evaluators whether a finished round completes the task, needs another round, or is blocked.
Rails run at seven hooks; `swarmflow.runtime.rails` says what a veto and an amend do
at each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from time import perf_counter
from typing import Any, cast

import anyio

from swarmflow.context.surroundings import Surroundings
from swarmflow.core.budget import (
    CallEstimate,
    Charge,
    Ledger,
    Reservation,
    all_ledgers,
    reserve_call,
)
from swarmflow.core.errors import BudgetExhausted, ConfigError, SwarmflowError
from swarmflow.core.history import HistoryView
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from swarmflow.core.ports import (
    BoardPort,
    EditWatch,
    Emit,
    PostsEvidence,
    ToolContext,
    Workspace,
)
from swarmflow.core.secrets import preview
from swarmflow.core.states import EndReason, SessionState, check_transition, end_state_for
from swarmflow.core.team import Agent
from swarmflow.core.tokens import message_units, prompt_units
from swarmflow.record.events import (
    AgentFinished,
    CacheBust,
    ExperienceRefused,
    ExperienceRetrieved,
    GoalEvaluated,
    ModelCalled,
    RailVetoed,
    SessionEnded,
    SessionStarted,
    SessionTold,
)
from swarmflow.runtime.context import RunContext, Scope, current_session
from swarmflow.runtime.rails import Hook, RailContext, Verdict
from swarmflow.sessions.goals import Decision, GoalView, evaluate_goals
from swarmflow.sessions.inbox import SessionInbox, board_source
from swarmflow.sessions.layout import (
    notes_block,
    offered,
    split_card,
    task_of,
    with_branch_part,
)
from swarmflow.sessions.prefix import PrefixMeter
from swarmflow.sessions.profile import agent_profile
from swarmflow.sessions.toolrun import ToolRunner

DEFAULT_CONTEXT_TOKENS = 120_000
"""The context budget (whole request) when the run sets none."""
TOLD_PREVIEW = 1000
"""How much of a told message its `session_told` event shows."""


Messenger = Callable[["AgentSession", str, str], Awaitable[str]]
"""Delivers a `message_agent` call (sender, recipient, text) and returns the answer."""


@dataclass(frozen=True, slots=True)
class Collaborators:
    """What a session works with besides its agent's profile, given when it is built."""

    workspace: Workspace | None = None
    messenger: Messenger | None = None
    """Behind the `message_agent` tool: a fresh call of the recipient, or a Team's routing."""
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


@dataclass(frozen=True, slots=True)
class Finish:
    """The inner loop's proposal to end a round: a final answer or a submission."""

    reason: EndReason
    text: str


class AgentSession:
    """A stateful session of one declared agent."""

    # Slots: thousands of sessions can be in flight at once in a fan-out.
    __slots__ = (
        "__weakref__",
        "_envelope",
        "_first_layout",
        "_fixed_units",
        "_history_units",
        "_ledgers",
        "_lock",
        "_prefix",
        "_rails",
        "_sent_units",
        "_system_message",
        "_tools",
        "agent",
        "closed",
        "cost",
        "detail",
        "error",
        "hear",
        "history",
        "inbox",
        "id",
        "model",
        "profile",
        "last_text",
        "reason",
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
        self.model = profile.model  # a structured ask wraps it for this session alone
        """What every session of its agent shares in the run: model, price, tool schemas."""
        self._envelope = (agent.name, self.id, scope.branch)
        self.state = SessionState.IDLE
        self.reason: EndReason | None = None
        self.detail = ""
        self.error: BaseException | None = None
        self.history: list[Message] = []
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
        self.inbox = self._open_inbox(collaborators)
        """Evidence from the rest of the run, given at the next step boundary (`_hear`)."""
        self._history_units = 0
        self._sent_units = 0
        self._lock: anyio.Lock | None = None  # made on first use; one-shot calls never lock
        self._rails = bool(run.deps.rails)
        self._ledgers = self._ledger_set()
        self._prefix = PrefixMeter(profile.specs, profile.spec_units, profile.first_request)
        shared_card, branch_part = split_card(system)
        self._first_layout: str | None = branch_part
        """The card's session-specific part, placed after the task at the first request
        (`sessions.layout`); None once the first request is laid out."""
        self._system_message = Message("system", shared_card) if shared_card else None
        # The part of every request that compaction cannot shrink: role card and tool schemas.
        self._fixed_units = profile.spec_units + (
            message_units(self._system_message) if self._system_message else 0
        )
        emit = self.emit  # one bound method for the runner and its context
        self._tools = ToolRunner(
            profile.source,
            profile.allowed,
            context=self._tool_context(collaborators, emit),
            emit=emit,
            rails=self._rails_at if self._rails else None,
            write_ahead=run.deps.write_ahead,
            watch=self._edit_watch(),
        )
        self.emit(SessionStarted, model=self.profile.model_name, tools=profile.tools)
        run.state.sessions.add(self)

    # -- plumbing ---------------------------------------------------------------------------

    def _ledger_set(self) -> list[Ledger]:
        """Every ledger a call of this session charges: its branch's chain and its allowance's.

        Cached per branch ledger and agent: thousands of sessions share a handful of sets.
        """
        key = (id(self.scope.ledger), self.agent.name)
        found = self.run.state.ledger_sets.get(key)
        if found is None or found[0] is not self.scope.ledger:
            heads = [self.scope.ledger]
            allowance = self.run.state.agent_ledger(self.agent)
            if allowance is not None:
                heads.append(allowance)
            found = self.run.state.ledger_sets[key] = (self.scope.ledger, all_ledgers(heads))
        return found[1]

    def emit(self, cls: Any, **fields: Any) -> None:
        """Record an event with this session's envelope."""
        fields["agent"], fields["session"], fields["branch"] = self._envelope
        self.run.deps.log.record(cls, fields)

    def _to(self, target: SessionState) -> None:
        check_transition(self.state, target)
        self.state = target

    def _end(self, reason: EndReason, detail: str = "") -> None:
        self._to(end_state_for(reason))
        self.reason = reason
        self.detail = detail

    def wait_for_teammate(self) -> None:
        """A tool call is waiting on another agent (`message_agent`)."""
        self._to(SessionState.WAITING)

    def resume_tools(self) -> None:
        if self.state is SessionState.WAITING:
            self._to(SessionState.RUNNING_TOOLS)

    def _append(self, message: Message) -> None:
        self.history.append(message)
        self._history_units += message_units(message)

    def _answer_open_calls(self, why: str) -> None:
        """Answer each tool call of the last model response that has no observation (the turn
        ended before it ran): servers refuse a conversation holding an unanswered call, so the
        session's next turn would fail."""
        index = len(self.history) - 1
        while index >= 0 and self.history[index].role == "tool":
            index -= 1
        if index < 0 or not self.history[index].tool_calls:
            return
        answered = {m.tool_call_id for m in self.history[index + 1 :]}
        for call in self.history[index].tool_calls:
            if call.id not in answered:
                self._append(Message("tool", f"not run: {why}", tool_call_id=call.id,
                                     name=call.name))  # fmt: skip

    def _tool_context(self, collaborators: Collaborators, emit: Emit) -> ToolContext:
        """What this session's tools see: who calls, the workspace, the event recorder."""
        messenger = collaborators.messenger
        return ToolContext(
            agent=self.agent.name,
            session=self.id,
            workspace=self.workspace,
            emit=emit,
            message_agent=None if messenger is None else partial(messenger, self),
            declaration=self.agent,
            budget=self.scope.ledger.snapshot,
            board=collaborators.board,
            run_dir=self.run.deps.run_dir,
        )

    def move_to(self, workspace: Workspace) -> None:
        """Work on in `workspace` from now on (a resumed session takes over the worktree its
        replayed turns edited); its tools see the new one."""
        if (old := _posting(self.workspace)) is not None:
            old.unsubscribe(self.id)
        self.workspace = workspace
        self._tools.context.workspace = workspace
        if (new := _posting(workspace)) is not None:
            new.subscribe(self.inbox)

    def adopt_turn(
        self,
        messages: list[Message],
        *,
        replace: bool,
        text: str,
        usage: Usage,
        cost: float,
        steps: int,
        submitted: bool = False,
    ) -> None:
        """Take over a turn a resumed run replays from its journal (no model is called); a
        turn that ended in `submit` ends so again (a Team run's lead reads it)."""
        self.told.clear()  # the recorded turn carried them
        if replace:
            self.history, self._history_units = [], 0
        for message in messages:
            self._append(message)
        self.last_text = text
        self.steps += steps
        self.usage += usage
        self.cost += cost
        # The recorded turn went precheck -> calling model -> done; the replay walks the same
        # legal path so the session's state is what it would have been.
        if self.state.is_end:
            self._to(SessionState.IDLE)
        self._to(SessionState.PRECHECK)
        self._to(SessionState.CALLING_MODEL)
        self._end(EndReason.SUBMITTED if submitted else EndReason.COMPLETED)

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
        self._append(Message("user", content))
        self.told.append(content)
        self.emit(SessionTold, text=preview(content, TOLD_PREVIEW))

    async def turn(self, content: str) -> str:
        """Run one turn on a user message; concurrent turns on one session are serialised."""
        async with self.turn_lock:
            return await self.turn_unlocked(content)

    async def turn_unlocked(self, content: str) -> str:
        """Run one turn; the caller holds `turn_lock` or owns the session alone."""
        if self.state.is_end:
            self._to(SessionState.IDLE)
        self.error = None
        self.told.clear()  # this turn carries them
        token = current_session.set(self)
        try:
            await self._finish_turn(await self._round_trip(content))
        except anyio.get_cancelled_exc_class():
            self._end(self._cancel_reason(), "cancelled from outside the session")
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

    async def _round_trip(self, content: str) -> Finish | None:
        """The turn's work: the turn_start rails, then the outer or the inner loop."""
        verdict = await self._rails_at(Hook.TURN_START, content)
        if verdict.veto is not None:
            self._vetoed(Hook.TURN_START, verdict)
            return None
        self._append(Message("user", verdict.payload))
        if self.profile.goals:
            return await self._outer_loop()
        return await self._inner_loop()  # no goal evaluators: one round

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
        self.last_text = verdict.payload
        if finish is not None:
            self._end(finish.reason)

    def _cancel_reason(self) -> EndReason:
        root = self.run.state.ledger
        if root.limits.seconds is not None and root.elapsed() >= root.limits.seconds:
            return EndReason.WALL_CLOCK
        return EndReason.CANCELLED

    async def _fault(self, exc: Exception) -> None:
        """End in error; the on_error rails may replace the error the caller sees."""
        self.error = exc
        if not self.state.is_end:
            self._end(EndReason.ERROR, _describe(exc))
        try:
            verdict = await self._rails_at(Hook.ON_ERROR, exc, error=exc)
        except Exception as rail_exc:  # a failing error rail must not hide the first fault
            self.detail += f"; on_error rail failed: {rail_exc}"
            return
        if verdict.veto is None and verdict.payload is not exc:
            self.error = verdict.payload
            self.detail = _describe(verdict.payload)

    async def _outer_loop(self) -> Finish | None:
        rounds = 0
        while True:
            finish = await self._inner_loop()
            if finish is None:
                return None
            self.last_text = finish.text
            rounds += 1
            decision, note = await self._judge(finish, rounds)
            if decision == "complete":
                return finish
            if decision == "blocked":
                self._end(EndReason.GOAL_BLOCKED, note)
                return None
            if rounds >= self.agent.max_goal_rounds:
                detail = f"goal not met after {rounds} rounds: {note}"
                self._end(EndReason.GOAL_ROUND_LIMIT, detail)
                return None
            self._append(Message("user", f"The goal is not met yet: {note}\nContinue."))

    async def _judge(self, finish: Finish, rounds: int) -> tuple[Decision, str]:
        view = GoalView(self.agent.name, self.id, finish.text, tuple(self.history), rounds)
        name, decision, note = await evaluate_goals(self.profile.goals, view)
        self.emit(GoalEvaluated, evaluator=name, decision=decision, note=note)
        return decision, note

    # -- the inner loop ---------------------------------------------------------------------

    async def _inner_loop(self) -> Finish | None:
        while True:
            self._to(SessionState.PRECHECK)
            if self._precheck_stops():
                return None
            self._hear()
            request = await self._build_request()
            reservation = self._reserve(request)
            if reservation is None:
                return None
            self._to(SessionState.CALLING_MODEL)
            response = await self._call_model(request, reservation)
            if response is None:
                return None
            if not response.tool_calls:
                return Finish(EndReason.COMPLETED, response.text or "")
            self._to(SessionState.RUNNING_TOOLS)
            finish = await self._run_tools(response.tool_calls)
            if finish is not None or self.state.is_end:
                return finish

    def _hear(self) -> None:
        """Passive awareness: the evidence that arrived since the last step (mentions,
        diagnostics, workspace changes) joins the context at this step boundary, as one
        message (no step and no model call of their own; `sessions.inbox`)."""
        note = self.inbox.drain(self.steps + 1)
        if note:
            self._append(Message("user", note))

    def _open_inbox(self, collaborators: Collaborators) -> SessionInbox:
        """The inbox, with the board's mentions as a source and the workspace subscribed."""
        inbox = SessionInbox(self.agent.name, self.id, self.emit)
        if collaborators.hear is not None:
            inbox.add_source(board_source(collaborators.hear))
        if (posting := _posting(self.workspace)) is not None:
            posting.subscribe(inbox)
        return inbox

    def _edit_watch(self) -> EditWatch | None:
        """Language-server feedback on this session's edits, when its agent asks for it."""
        feedback = self.run.deps.feedback
        if feedback is None or self.workspace is None or self.agent.feedback is None:
            return None
        return feedback.watch(self.agent, self.workspace, self.inbox)

    def _precheck_stops(self) -> bool:
        limit = self.agent.max_steps
        if limit is not None and self.steps >= limit:
            self._end(EndReason.STEP_LIMIT, f"{self.steps} of {limit} model calls used")
            return True
        return False

    async def _build_request(self) -> ModelRequest:
        budget = self.run.deps.context_tokens or DEFAULT_CONTEXT_TOKENS
        estimator = self.run.state.estimator
        if self._first_layout is not None:
            await self._lay_out_first_request()
        room = int(budget / estimator.rate(self.profile.model_name)) - self._fixed_units
        if self.profile.window.pressing(self._history_units, room):
            await self._compact(budget)
        self._sent_units = self._fixed_units + self._history_units
        # A snapshot: the request must not change when the history grows afterwards.
        messages = HistoryView(self.history, len(self.history), self._system_message)
        return ModelRequest(
            messages=messages,
            tools=self.profile.specs,
            agent=self.agent.name,
            model=self.profile.model_name,
            max_tokens=self.agent.max_output_tokens,
            estimated_prompt_tokens=estimator.tokens(self._sent_units, self.profile.model_name),
        )

    async def _lay_out_first_request(self) -> None:
        """The first request: experience notes join the shared card, and the card's
        session-specific part follows the task (`sessions.layout`). A resumed session whose
        replayed turns hold them already is left as it is."""
        branch, self._first_layout = self._first_layout or "", None
        if self.steps:
            return
        experience = self.run.deps.experience
        if experience is not None:
            task = task_of(self.history)
            try:
                notes = await anyio.to_thread.run_sync(offered, experience, self.agent.name, task)
            except SwarmflowError as exc:  # a store gone bad mid-run: the session goes on
                self.emit(ExperienceRefused, reason=str(exc))
                notes = ()
            experience.track(self.agent.name, self)
            if notes:
                card = self._system_message.content if self._system_message else ""
                block = notes_block(notes)
                self._system_message = Message("system", f"{card}\n\n{block}".lstrip())
                self._fixed_units = self.profile.spec_units + message_units(self._system_message)
            self.emit(ExperienceRetrieved, query=task[:300], notes=[n.brief() for n in notes])
        if branch:
            self.history = with_branch_part(self.history, branch)
            self._history_units = sum(message_units(m) for m in self.history)

    async def _compact(self, budget: int) -> None:
        """Fit the history into what the budget leaves after the role card and tool schemas:
        the agent's context policy fires its levels (docs/context.md)."""
        rate = self.run.state.estimator.rate(self.profile.model_name)
        room = int(budget / rate) - self._fixed_units
        if room <= 0:
            raise ConfigError(
                f"agent {self.agent.name!r}: its role card and tool schemas alone take about "
                f"{int(self._fixed_units * rate)} tokens, more than the context budget of "
                f"{budget} tokens",
                agent=self.agent.name,
            )
        compacted = await self.profile.window.compact(self.history, room, self._surroundings())
        self._prefix.rewritten()
        self.history = compacted.history
        self._history_units = sum(message_units(m) for m in compacted.history)
        self.usage += compacted.usage  # a summary's calls are this session's spend
        self.cost += compacted.cost

    def _surroundings(self) -> Surroundings:
        """What the context levels work with: where to offload, who pays for a summary."""
        profile, run = self.profile, self.run
        extra = profile.summary_ledger
        return Surroundings(
            agent=self.agent.name,
            session=self.id,
            workspace=self.workspace.root if self.workspace is not None else None,
            run_dir=run.deps.run_dir,
            model=profile.summariser,
            model_name=profile.summariser_name,
            price=profile.summariser_price,
            ledgers=self._ledgers if extra is None else [*self._ledgers, extra],
            estimator=run.state.estimator,
            emit=self.emit,
            context_tokens=run.deps.context_tokens or DEFAULT_CONTEXT_TOKENS,
        )

    def _reserve(self, request: ModelRequest) -> Reservation | None:
        """Reserve the prompt and the output this agent is expected to write; the reservation's
        cap bounds what the call may write (`core.budget.reserve_call`)."""
        call = CallEstimate(
            prompt=request.estimated_prompt_tokens,
            expected_output=self.run.state.estimator.expected_output(self.agent.name),
            max_output=request.max_tokens,
            price=self.profile.price,
        )
        try:
            return reserve_call(self._ledgers, call)
        except BudgetExhausted as exc:
            self.error = exc
            self._end(EndReason(exc.reason), exc.message)
            return None

    async def _call_model(
        self, request: ModelRequest, reservation: Reservation
    ) -> ModelResponse | None:
        """One model call between its rails; None when the session ended on the way.

        Whatever the after-call rails decide, a call that was answered is settled first.
        """
        request = _capped(request, reservation.cap)
        verdict = await self._rails_at(Hook.BEFORE_MODEL_CALL, request)
        if verdict.veto is not None:
            reservation.release()
            self._vetoed(Hook.BEFORE_MODEL_CALL, verdict)
            return None
        if verdict.payload is not request:  # amended: measure what is really sent
            request = _capped(verdict.payload, reservation.cap)  # a rail cannot lift the cap
            self._sent_units = prompt_units(request.messages, request.tools)
        self.run.deps.write_ahead()  # what came before the call is on disk before it starts
        started = perf_counter()
        try:
            answer = await self.model.complete(request)
        except BaseException:
            reservation.release()
            raise
        over = self.settle_call(request, answer, reservation, perf_counter() - started)
        verdict = await self._rails_at(Hook.AFTER_MODEL_CALL, answer)
        if verdict.veto is not None:
            self._vetoed(Hook.AFTER_MODEL_CALL, verdict)
            return None
        response: ModelResponse = verdict.payload
        self._append(Message("assistant", response.text, tuple(response.tool_calls)))
        if response.text:
            self.last_text = response.text
        if over:
            self._end(EndReason.BUDGET_EXCEEDED_AFTER_CALL, f"over the limit of {', '.join(over)}")
            return None
        return response

    def settle_call(
        self,
        request: ModelRequest,
        response: ModelResponse,
        reservation: Reservation,
        latency: float,
        *,
        sent_units: int | None = None,
        prefix: PrefixMeter | None = None,
        **recorded: Any,
    ) -> list[str]:
        """Charge the actual usage, teach the estimator, record the call; the ledgers now over.

        A harness's calls settle here too (`swarmflow.harnesses`): `sent_units` is what its
        request held, `prefix` the meter of its own requests, `recorded` the `model_called`
        fields of its own."""
        usage = response.usage
        # Price by the configured name (what price overrides use); servers report variants.
        cost = (
            self.profile.price.cost(usage)
            if request.model
            else self.run.deps.prices.cost(response.model, usage)
        )
        over = reservation.settle(Charge(usage.input + usage.output, cost, 1))
        estimator = self.run.state.estimator
        sent = self._sent_units if sent_units is None else sent_units
        estimator.learn(self.profile.model_name, sent, usage.input)
        if usage.input or usage.output:  # a server that reported no usage teaches nothing
            estimator.learn_output(self.agent.name, usage.output)
        self.steps += 1
        self.usage += usage
        self.cost += cost
        meter = prefix or self._prefix
        self.emit(
            ModelCalled,
            model=response.model or request.model,
            step=self.steps,
            tokens_in=usage.input,
            tokens_out=usage.output,
            tokens_cached=usage.cached_input,
            latency=latency,
            cost=cost,
            finish_reason=response.finish_reason,
            tool_calls=[c.name for c in response.tool_calls],
            output_mode=response.output_mode,
            **meter.measure(request),
            **recorded,
        )
        if meter.bust is not None:
            self.emit(CacheBust, step=self.steps, **asdict(meter.bust))
        return over

    async def _run_tools(self, calls: Sequence[ToolCall]) -> Finish | None:
        """Run the calls and record their observations; a submission finishes the round."""
        done = await self._tools.run_all(calls)
        screen = self.screen
        run, name = self.run, self.agent.name
        for observation in done.observations:
            self._append(observation if screen is None else screen(run, name, observation))
        self._answer_open_calls("the turn ended before this call ran")
        if done.submitted is not None:
            return Finish(EndReason.SUBMITTED, done.submitted)
        if done.loop is not None:
            self._end(EndReason.LOOP_BLOCK, done.loop)
        return None

    # -- rails ------------------------------------------------------------------------------

    async def rails_at(self, hook: Hook, payload: Any) -> Verdict:
        """Run the rails visible to this agent at `hook` for work done outside the session's
        own loop (a harness's model calls), recording a veto."""
        return await self._rails_at(hook, payload)

    async def _rails_at(
        self, hook: Hook, payload: Any, error: BaseException | None = None
    ) -> Verdict:
        """Run the rails visible to this agent at `hook`, recording a veto."""
        if not self._rails:
            return Verdict(payload)
        ctx = RailContext(hook, self.agent.name, self.id, self.steps, payload, error)
        verdict = await self.run.deps.rails.run(ctx)
        if verdict.veto is not None:
            self.emit(RailVetoed, hook=hook.value, rail=verdict.rail, reason=verdict.veto.reason)
        return verdict

    def _vetoed(self, hook: Hook, verdict: Verdict) -> None:
        reason = verdict.veto.reason if verdict.veto is not None else ""
        self._end(EndReason.VETOED, f"rail {verdict.rail!r} vetoed {hook.value}: {reason}")

    # -- work done outside (a harness) -----------------------------------------------------

    def begin_outside(self) -> list[Ledger]:
        """Start a turn whose work an outside program does (`swarmflow.harnesses`): the
        session is calling its model until `end_outside`. The caller reserves and settles
        each of the program's model calls on the ledgers returned, the ones a call of this
        session charges, and adds them to `steps`, `usage` and `cost`."""
        if self.state.is_end:
            self._to(SessionState.IDLE)
        self.error = None
        self._to(SessionState.PRECHECK)
        self._to(SessionState.CALLING_MODEL)
        return self._ledgers

    def end_outside(
        self, reason: EndReason, detail: str, text: str, error: BaseException | None = None
    ) -> None:
        """End the outside turn with its answer, as a native turn ends (`agent_finished`)."""
        self.last_text = text
        self.error = error
        self._end(reason, detail)
        self.emit(AgentFinished, produced_content=bool(text.strip()), preview=text[:1000])

    # -- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """End the session for good and record how it ended."""
        if self.closed:
            return
        self.closed = True
        self.run.state.sessions.discard(self)
        if (posting := _posting(self.workspace)) is not None:  # its reservations end with it
            posting.unsubscribe(self.id)
        if self.state is SessionState.IDLE:
            self._end(EndReason.COMPLETED, "closed before any turn")
        elif not self.state.is_end:  # closed from outside mid-turn: the cancellation escape
            self._end(EndReason.CANCELLED, self.detail or "closed before its turn finished")
        reason = self.reason or EndReason.COMPLETED
        self.emit(
            SessionEnded,
            state=self.state.value,
            reason=reason.value,
            detail=self.detail,
            steps=self.steps,
            tokens=self.usage.total,
        )


def _capped(request: ModelRequest, cap: int | None) -> ModelRequest:
    """`request`, asking for no more output than the budget's cap allows: a call cut there
    ends as any `length` finish does."""
    if cap is None or request.max_tokens <= cap:
        return request
    return replace(request, max_tokens=cap)


def _posting(workspace: Workspace | None) -> PostsEvidence | None:
    """The workspace as a source of evidence (a shared one), or None. A duck check: a
    runtime-checkable protocol's `isinstance` costs about 30 µs, paid by every session."""
    if workspace is None or not callable(getattr(workspace, "subscribe", None)):
        return None
    return cast(PostsEvidence, workspace)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
