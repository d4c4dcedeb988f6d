"""One agent's conversation: a checked state machine running the inner and outer loops.

Inner loop, one step per model call: precheck limits, build the context, price and reserve the
call, call the model, settle the actual usage, run the tool calls, record the observations.
It ends at a final answer, at `submit`, or at a limit. The outer loop asks the agent's goal
evaluators whether a finished round completes the task, needs another round, or is blocked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import anyio

from swarmflow.core.budget import Charge, Ledger, Reservation, all_ledgers, reserve_on
from swarmflow.core.errors import BudgetExhausted, SwarmflowError
from swarmflow.core.events import (
    AgentFinished,
    ContextCompacted,
    GoalEvaluated,
    ModelCalled,
    RailVetoed,
    SessionEnded,
    SessionStarted,
)
from swarmflow.core.fastinit import fast_init
from swarmflow.core.history import HistoryView
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Usage,
    estimate_tokens,
)
from swarmflow.core.ports import Workspace
from swarmflow.core.states import EndReason, SessionState, check_transition, end_state_for
from swarmflow.core.team import Agent
from swarmflow.runtime.context import RunContext, Scope, current_session
from swarmflow.runtime.goals import Decision, GoalView, evaluate_goals
from swarmflow.runtime.profile import agent_profile
from swarmflow.runtime.rail_registry import Hook, RailContext
from swarmflow.runtime.toolrun import ToolRunner
from swarmflow.runtime.window import drop_oldest, elide_observations, message_tokens

S = SessionState
# Plain module constants: reading an Enum member off its class goes through a descriptor, and
# the inner loop reads them on every step.
IDLE, PRECHECK, CALLING_MODEL = S.IDLE, S.PRECHECK, S.CALLING_MODEL
RUNNING_TOOLS, WAITING = S.RUNNING_TOOLS, S.WAITING
NO_USAGE = Usage()
DEFAULT_CONTEXT_TOKENS = 120_000
DEFAULT_GOAL_ROUNDS = 5


@fast_init
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
        "_fixed_tokens",
        "_goals",
        "_history_tokens",
        "_ledgers",
        "_lock",
        "_model_name",
        "_price",
        "_rails",
        "_specs",
        "_system_message",
        "_tool_runner",
        "agent",
        "closed",
        "detail",
        "error",
        "history",
        "id",
        "last_text",
        "messenger",
        "model",
        "provenance",
        "reason",
        "run",
        "scope",
        "state",
        "steps",
        "system",
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
        workspace: Workspace | None = None,
    ) -> None:
        profile = agent_profile(run, agent)
        self.run = run
        self.agent = agent
        self.id = new_session_id(agent.name)
        self.scope = scope
        self.workspace = workspace
        self.model = profile.model
        self.provenance = frozenset((agent.name,))  # what this session produces is its agent's
        self._envelope = (agent.name, self.id, scope.branch)
        self.state = IDLE
        self.reason: EndReason | None = None
        self.detail = ""
        self.error: BaseException | None = None
        self.history: list[Message] = []
        self.system = system
        self.steps = 0
        self.usage = NO_USAGE
        self.last_text = ""
        self.closed = False
        self.messenger: Callable[[str, str], Awaitable[str]] | None = None
        self._history_tokens = 0
        self._lock: anyio.Lock | None = None  # made on first use; one-shot calls never lock
        self._goals = profile.goals
        self._rails = bool(run.rails)
        self._model_name = profile.model_name
        self._price = profile.price
        self._ledgers = self._ledger_set()
        self._specs = profile.specs
        self._tool_runner: ToolRunner | None = None  # made at the first tool call
        if system:
            self._system_message: Message | None = Message("system", system)
            self._fixed_tokens = estimate_tokens(system) + 4 + profile.spec_tokens
        else:
            self._system_message = None
            self._fixed_tokens = profile.spec_tokens
        self._emit(SessionStarted, model=self._model_name, tools=profile.tools)
        run.sessions.add(self)

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def _tools(self) -> ToolRunner:
        if self._tool_runner is None:
            self._tool_runner = ToolRunner(self)
        return self._tool_runner

    def _ledger_set(self) -> list[Ledger]:
        """Every ledger a call of this session charges: its branch's chain and its allowance's.

        Cached per branch ledger and agent: thousands of sessions share a handful of sets.
        """
        key = (id(self.scope.ledger), self.agent.name)
        found = self.run.ledger_sets.get(key)
        if found is None or found[0] is not self.scope.ledger:
            heads = [self.scope.ledger]
            allowance = self.run.agent_ledger(self.agent)
            if allowance is not None:
                heads.append(allowance)
            found = self.run.ledger_sets[key] = (self.scope.ledger, all_ledgers(heads))
        return found[1]

    def emit(self, cls: Any, **fields: Any) -> None:
        """Record an event with this session's envelope."""
        self._emit(cls, **fields)

    def _emit(self, cls: Any, **fields: Any) -> None:
        fields["agent"], fields["session"], fields["branch"] = self._envelope
        self.run.log.record(cls, fields)

    def _to(self, target: SessionState) -> None:
        check_transition(self.state, target)
        self.state = target

    def _end(self, reason: EndReason, detail: str = "") -> None:
        self._to(end_state_for(reason))
        self.reason = reason
        self.detail = detail

    def message_agent_hook(self) -> Callable[[str, str], Awaitable[str]] | None:
        """How this session's `message_agent` tool reaches teammates (set by the caller)."""
        return self.messenger

    def wait_for_teammate(self) -> None:
        """A tool call is waiting on another agent (`message_agent`)."""
        self._to(WAITING)

    def resume_tools(self) -> None:
        if self.state is WAITING:
            self._to(RUNNING_TOOLS)

    def _append(self, message: Message) -> None:
        self.history.append(message)
        self._history_tokens += message_tokens(message)

    def adopt_turn(
        self, messages: list[Message], *, replace: bool, text: str, usage: Usage, steps: int
    ) -> None:
        """Take over a turn a resumed run replays from its journal (no model is called)."""
        if replace:
            self.history, self._history_tokens = [], 0
        for message in messages:
            self._append(message)
        self.last_text = text
        self.steps += steps
        self.usage = usage if self.usage is NO_USAGE else self.usage + usage
        # The recorded turn went precheck -> calling model -> done; the replay walks the same
        # legal path so the session's state is what it would have been.
        if self.state.is_end:
            self._to(IDLE)
        self._to(PRECHECK)
        self._to(CALLING_MODEL)
        self._end(EndReason.COMPLETED)

    # -- a turn -----------------------------------------------------------------------------

    @property
    def turn_lock(self) -> anyio.Lock:
        """The session's one turn lock: `turn` takes it; hold it to run several turns in a row."""
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    async def turn(self, content: str) -> str:
        """Run one turn on a user message; concurrent turns on one session are serialised."""
        async with self.turn_lock:
            return await self.turn_unlocked(content)

    async def turn_unlocked(self, content: str) -> str:
        """Run one turn; the caller holds `turn_lock` or owns the session alone."""
        if self.state.is_end:
            self._to(IDLE)
        self.error = None
        self._append(Message("user", content))
        token = current_session.set(self)
        try:
            if self._rails:
                await self._rail(Hook.TURN_START, content)
            if self._goals:
                await self._outer_loop()
            else:  # no goal evaluators: one round, no outer loop to run
                finish = await self._inner_loop()
                if finish is not None:
                    self.last_text = finish.text
                    self._end(finish.reason)
        except anyio.get_cancelled_exc_class():
            self._end(self._cancel_reason(), "cancelled from outside the session")
            raise
        except Exception as exc:  # an unhandled fault ends the session in error
            await self._fault(exc)
        finally:
            current_session.reset(token)
        if self._rails:
            await self._rail(Hook.TURN_END, self.last_text)
        self._emit(
            AgentFinished,
            produced_content=bool(self.last_text.strip()),
            preview=self.last_text[:1000],
        )
        return self.last_text

    def _cancel_reason(self) -> EndReason:
        root = self.run.ledger
        if root.limits.seconds is not None and root.elapsed() >= root.limits.seconds:
            return EndReason.WALL_CLOCK
        return EndReason.CANCELLED

    async def _fault(self, exc: Exception) -> None:
        self.error = exc
        if not self.state.is_end:
            self._end(EndReason.ERROR, f"{type(exc).__name__}: {exc}")
        try:
            await self._rail(Hook.ON_ERROR, exc, error=exc)
        except Exception as rail_exc:  # a failing error rail must not hide the first fault
            self.detail += f"; on_error rail failed: {rail_exc}"

    async def _outer_loop(self) -> None:
        rounds = 0
        while True:
            finish = await self._inner_loop()
            if finish is None:
                return
            self.last_text = finish.text
            rounds += 1
            decision, note = await self._judge(finish, rounds)
            if decision == "complete":
                self._end(finish.reason)
                return
            if decision == "blocked":
                self._end(EndReason.GOAL_BLOCKED, note)
                return
            self._append(Message("user", f"The goal is not met yet: {note}\nContinue."))

    def agent_goals(self) -> tuple[Any, ...]:
        return self._goals

    async def _judge(self, finish: Finish, rounds: int) -> tuple[Decision, str]:
        view = GoalView(self.agent.name, self.id, finish.text, tuple(self.history), rounds)
        name, decision, note = await evaluate_goals(self.agent_goals(), view)
        self._emit(GoalEvaluated, evaluator=name, decision=decision, note=note)
        if decision == "continue" and rounds >= DEFAULT_GOAL_ROUNDS:
            return "blocked", f"goal not met after {rounds} rounds: {note}"
        return decision, note

    # -- the inner loop ---------------------------------------------------------------------

    async def _inner_loop(self) -> Finish | None:
        while True:
            self._to(PRECHECK)
            if self._precheck_stops():
                return None
            request = self._build_request()
            reservation = self._reserve(request)
            if reservation is None:
                return None
            self._to(CALLING_MODEL)
            if self._rails:
                railed = await self._before_model_call(request, reservation)
                if railed is None:
                    return None
                request = railed
            # The call itself stays inline: one coroutine frame fewer on every model call.
            started = perf_counter()
            try:
                answer = await self.model.complete(request)
            except BaseException:
                reservation.release()
                raise
            latency = perf_counter() - started
            if self._rails:
                answer = await self._rail(Hook.AFTER_MODEL_CALL, answer)
            response = self._settle(request, answer, reservation, latency)
            if response is None:
                return None
            if not response.tool_calls:
                return Finish(EndReason.COMPLETED, response.text or "")
            self._to(RUNNING_TOOLS)
            finish = await self._tools.run_all(response.tool_calls)
            if finish is not None or self.state.is_end:
                return finish

    def _precheck_stops(self) -> bool:
        limit = self.agent.max_steps
        if limit is not None and self.steps >= limit:
            self._end(EndReason.STEP_LIMIT, f"{self.steps} of {limit} model calls used")
            return True
        return False

    def _build_request(self) -> ModelRequest:
        budget = self.run.context_tokens or DEFAULT_CONTEXT_TOKENS
        if self._history_tokens > budget:
            self._compact(budget)
        # A snapshot: the request must not change when the history grows afterwards.
        messages = HistoryView(self.history, len(self.history), self._system_message)
        return ModelRequest(
            messages=messages,
            tools=self._specs,
            agent=self.agent.name,
            model=self._model_name,
            max_tokens=self.agent.max_output_tokens,
            estimated_prompt_tokens=self._prompt_estimate(),
        )

    def _compact(self, budget: int) -> None:
        before = len(self.history)
        level = "elide_observations"
        history = elide_observations(self.history)
        if sum(message_tokens(m) for m in history) > budget:
            level = "drop_oldest"
            history = drop_oldest(history, budget)
        self.history = history
        self._history_tokens = sum(message_tokens(m) for m in history)
        self._emit(
            ContextCompacted, level=level, messages_before=before, messages_after=len(history)
        )

    def _prompt_estimate(self) -> int:
        """Kept incrementally: re-estimating the whole history each step would be O(n^2)."""
        return self._history_tokens + self._fixed_tokens

    def _estimate(self, request: ModelRequest) -> tuple[int, float]:
        prompt, most = request.estimated_prompt_tokens, request.max_tokens
        return prompt + most, self._price.cost_of(prompt, most)

    def _reserve(self, request: ModelRequest) -> Reservation | None:
        tokens, cost = self._estimate(request)
        try:
            return reserve_on(self._ledgers, Charge(tokens, cost, 1))
        except BudgetExhausted as exc:
            self.error = exc
            self._end(EndReason(exc.reason), exc.message)
            return None

    async def _before_model_call(
        self, request: ModelRequest, reservation: Reservation
    ) -> ModelRequest | None:
        """The request as the before-call rails amend it; None (session ended) on a veto."""
        try:
            amended: ModelRequest = await self._rail(Hook.BEFORE_MODEL_CALL, request)
        except _Vetoed as veto:
            reservation.release()
            self._end(EndReason.ERROR, veto.message)
            return None
        return amended

    def _settle(
        self,
        request: ModelRequest,
        response: ModelResponse,
        reservation: Reservation,
        latency: float,
    ) -> ModelResponse | None:
        usage = response.usage
        # Price by the configured name (what price overrides use); servers report variants.
        cost = (
            self._price.cost(usage)
            if request.model
            else self.run.prices.cost(response.model, usage)
        )
        over = reservation.settle(Charge(usage.input + usage.output, cost, 1))
        self.steps += 1
        self.usage = usage if self.usage is NO_USAGE else self.usage + usage
        self._emit(
            ModelCalled,
            model=response.model or request.model,
            step=self.steps,
            tokens_in=usage.input,
            tokens_out=usage.output,
            tokens_cached=usage.cached_input,
            latency=latency,
            cost=cost,
            finish_reason=response.finish_reason,
            tool_calls=[c.name for c in response.tool_calls] if response.tool_calls else [],
        )
        self._append(Message("assistant", response.text, tuple(response.tool_calls)))
        if response.text:
            self.last_text = response.text
        if over:
            self._end(EndReason.BUDGET_EXCEEDED_AFTER_CALL, f"over the limit of {', '.join(over)}")
            return None
        return response

    # -- rails ------------------------------------------------------------------------------

    async def _rail(self, hook: Hook, payload: Any, error: BaseException | None = None) -> Any:
        rails = self.run.rails
        if not rails:
            return payload
        ctx = RailContext(hook, self.agent.name, self.id, self.steps, payload, error)
        payload, veto, name = await rails.run(ctx)
        if veto is not None:
            self._emit(RailVetoed, hook=hook.value, rail=name, reason=veto.reason)
            raise _Vetoed(f"rail {name!r} vetoed {hook.value}: {veto.reason}")
        return payload

    # -- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """End the session for good and record how it ended."""
        if self.closed:
            return
        self.closed = True
        self.run.sessions.discard(self)
        if self.state is IDLE:
            self.state, self.reason = S.DONE, EndReason.COMPLETED
            self.detail = "closed before any turn"
        elif not self.state.is_end:
            # Closed from outside mid-turn: the cancellation escape of the state machine.
            self.state, self.reason = S.STOPPED, EndReason.CANCELLED
            self.detail = self.detail or "closed before its turn finished"
        reason = self.reason or EndReason.COMPLETED
        state = self.state._value_ if self.state.is_end else "stopped"
        self._emit(
            SessionEnded,
            state=state,
            reason=reason._value_,
            detail=self.detail,
            steps=self.steps,
            tokens=self.usage.total,
        )


class _Vetoed(SwarmflowError):
    """A rail vetoed what was about to happen."""
