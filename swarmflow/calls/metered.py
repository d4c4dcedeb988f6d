"""The metered model call: every model call of a run goes through `metered_call`.

In this order: the step limit is checked; the call is reserved on every ledger it charges
(`calls.ledgers`) and `max_tokens` capped to what the reservation allows; the visible
`before_model_call` rails run (a veto releases the reservation, an amendment is capped again);
the call is journaled as started and the write barrier puts everything before it on disk; a
call an interrupted run had settled with the same key is answered from the journal at 0
tokens (`calls.journal`), any other is sent to the model; the usage is settled, the estimator
taught, one `model_called` recorded; then the `after_model_call` rails run on the answer. A
call that was answered is settled whatever those rails decide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any, Literal, NamedTuple

import anyio

from swarmflow.calls.journal import (
    SentDigest,
    note_failed,
    note_finished,
    note_started,
    recorded_response,
)
from swarmflow.calls.ledgers import charge_recorded
from swarmflow.core.budget import CallEstimate, Charge, Ledger, Reservation, reserve_call
from swarmflow.core.errors import BudgetExhausted
from swarmflow.core.messages import Model, ModelRequest, ModelResponse, Usage
from swarmflow.core.pricing import Price
from swarmflow.core.states import EndReason
from swarmflow.core.tokens import prompt_units
from swarmflow.record.events import ModelCalled, RailVetoed
from swarmflow.record.journal import Journal
from swarmflow.record.records import ModelCallFinished
from swarmflow.runtime.context import RunContext
from swarmflow.runtime.rails import Hook, RailContext, Verdict

Purpose = Literal["turn", "summary", "reflection", "judge", "harness"]
Payment = Literal["paid", "replayed", "repaid"]
Emit = Callable[..., object]
"""Records one event with the caller's envelope: `emit(EventClass, **fields)`."""
Measure = Callable[[ModelRequest], Mapping[str, int]]
"""The prompt's measure a `model_called` records (its tokens, the part that repeats)."""

session_purpose: ContextVar[Purpose] = ContextVar("swarmflow_session_purpose", default="turn")
"""What the sessions opened in this context call their model for: "turn", or "judge" inside
a grader's run (`experiments.rubric`)."""


@dataclass(slots=True)
class Caller:
    """Who makes a model call: what it is charged to, and how it is recorded."""

    run: RunContext
    agent: str
    session: str
    branch: str
    ledgers: list[Ledger]
    """Every ledger the call charges (`calls.ledgers.charged_ledgers`)."""
    price: Price
    emit: Emit
    purpose: Purpose = "turn"
    max_steps: int | None = None
    """The agent's step limit: past it no call is made."""
    expected_output: int | None = None
    """What to reserve for the output; None: what the estimator learned of this caller."""
    sent: SentDigest = field(default_factory=SentDigest)
    """The running digest of its requests, for their journal keys."""


class Refusal(NamedTuple):
    """Why a call was not made, or its answer not taken: how its caller ends."""

    reason: EndReason
    detail: str
    kind: Literal["step_limit", "budget", "rail"]
    error: BudgetExhausted | None = None


@dataclass(slots=True)
class Called:
    """What came of one metered call."""

    response: ModelResponse | None = None
    """The answer as the after-call rails left it; None when the call was refused or its
    answer vetoed."""
    refusal: Refusal | None = None
    over: list[str] = field(default_factory=list)
    """The ledgers the settled call took over their limits."""
    usage: Usage = Usage()
    cost: float = 0.0
    calls: int = 0
    """1 once the call was answered (from the model or the journal)."""
    payment: Payment = "paid"
    latency: float = 0.0


def over_step_limit(steps: int, limit: int | None) -> str | None:
    """The precheck: what a caller that made `steps` calls of `limit` says when it may make
    no more, or None (`metered_call` says the same)."""
    if limit is not None and steps >= limit:
        return f"{steps} of {limit} model calls used"
    return None


async def metered_call(
    caller: Caller,
    model: Model,
    request: ModelRequest,
    *,
    steps: int = 0,
    sent_units: int | None = None,
    measure: Measure | None = None,
    recorded: Mapping[str, object] | None = None,
    timeout: float | None = None,
) -> Called:
    """Make one model call, metered (see the module's docstring).

    `steps`: the calls the caller made before this one; `sent_units`: the prompt's size in
    estimator units (measured here when not given or when a rail amended the request);
    `measure`: the prompt's fields for the event; `recorded`: more fields for it (a harness
    request's shape); `timeout`: the seconds the model may take (`TimeoutError` after).

    Raises:
        Exception: what the model raised; the reservation is released and the started call
            journaled as failed first.
    """
    purpose = caller.purpose  # whose output sizes the estimator learns (`_learner`)
    learner = caller.agent if purpose in _OWN_STEPS else _learner(caller)
    held = _reserved(caller, request, steps, learner)
    if isinstance(held, Called):  # refused: past the step limit, or by a budget
        return held
    if held.cap is not None and request.max_tokens > held.cap:
        request = capped(request, held.cap)
    rails = bool(caller.run.deps.rails)  # no rails: no verdicts to make either side
    if rails:
        sent = await _rails_before(caller, request, held, steps)
        if isinstance(sent, Called):  # vetoed
            return sent
        if sent is not request:  # amended: measure what is really sent
            request, sent_units = sent, None
    run = caller.run
    journal = run.deps.journal
    found = started = None
    payment: Payment = "paid"
    if journal is not None:
        found, started, payment = _journaled(caller, request, journal)
    run.deps.write_ahead()  # what came before the call is on disk before it starts
    if found is not None:
        held.release()
        called = _replayed(caller, found)
    else:
        begun = perf_counter()
        try:
            if timeout is None:
                answer = await model.complete(request)
            else:
                with anyio.fail_after(timeout):
                    answer = await model.complete(request)
        except BaseException as exc:
            _unanswered(caller, held, started, exc)
            raise
        called = _paid(caller, request, answer, held, (started, steps + 1))
        called.payment, called.latency = payment, perf_counter() - begun
    units = prompt_units(request.messages, request.tools) if sent_units is None else sent_units
    _teach(caller, request, called.usage, units, learner)
    _record(caller, request, called, steps + 1, (measure, recorded))
    if rails:
        await _rails_after(caller, called, steps + 1)
    return called


async def _rails_before(
    caller: Caller, request: ModelRequest, held: Reservation, steps: int
) -> ModelRequest | Called:
    """The request as the `before_model_call` rails leave it (capped again when amended), or
    the refused call when one vetoes it (its reservation released)."""
    verdict = await rails_at(caller, Hook.BEFORE_MODEL_CALL, request, steps)
    if verdict.veto is not None:
        held.release()
        return Called(refusal=_vetoed(Hook.BEFORE_MODEL_CALL, verdict))
    amended: ModelRequest = verdict.payload
    return request if amended is request else capped(amended, held.cap)  # the cap holds


async def _rails_after(caller: Caller, called: Called, step: int) -> None:
    """The `after_model_call` rails on the answer: amended, or vetoed (then no answer, and
    the settled call stays settled)."""
    verdict = await rails_at(caller, Hook.AFTER_MODEL_CALL, called.response, step)
    if verdict.veto is not None:
        called.response, called.refusal = None, _vetoed(Hook.AFTER_MODEL_CALL, verdict)
    else:
        called.response = verdict.payload


def _journaled(
    caller: Caller, request: ModelRequest, journal: Journal
) -> tuple[ModelCallFinished | None, bytes | None, Payment]:
    """The call's journal side before it is sent: the settled record a resumed run replays,
    or the call's key as its started record wrote it (for its finished record), and whether
    it is paid for again (an earlier process started it and died before it settled)."""
    key = (caller.branch, caller.agent, caller.purpose, caller.sent.of(request))
    payment: Payment = "paid"
    if journal.previous is not None:  # a resumed run: replay, or pay for the call again
        found = journal.model_call(key)
        if found is not None:
            return found, None, payment
        if journal.was_in_flight(key):
            payment = "repaid"
    return None, note_started(journal, key), payment


def _paid(
    caller: Caller,
    request: ModelRequest,
    answer: ModelResponse,
    held: Reservation,
    journaled: tuple[bytes | None, int],
) -> Called:
    """The model's answer, settled on the ledgers and journaled (`journaled`: its key as the
    started record wrote it, None without a journal, and the call's step)."""
    usage = answer.usage
    # Price by the configured name (what price overrides use); servers report variants.
    price = caller.price if request.model else caller.run.deps.prices.price(answer.model)
    cost = price.cost(usage)
    over = held.settle(Charge(usage.input + usage.output, cost, 1))
    started, step = journaled
    if started is not None:
        journal = caller.run.deps.journal
        assert journal is not None
        note_finished(journal, started, answer, cost, (caller.session, step))
    return Called(answer, None, over, usage, cost, 1)


def _unanswered(
    caller: Caller, held: Reservation, started: bytes | None, error: BaseException
) -> None:
    """The model raised: the reservation is released and a started call journaled as failed
    (a cancellation is not a failure: the call stops where it was, as a killed one does)."""
    held.release()
    journal = caller.run.deps.journal
    if started is not None and journal is not None and isinstance(error, Exception):
        note_failed(journal, started, error)


def _replayed(caller: Caller, found: ModelCallFinished) -> Called:
    """A recorded answer: its spend counted on the ledgers below the run's, nothing paid."""
    answer = recorded_response(found)
    charge_recorded(caller.run, caller.ledgers, Charge(answer.usage.total, found.cost, 1))
    return Called(answer, None, [], answer.usage, found.cost, 1, "replayed")


def _reserved(
    caller: Caller, request: ModelRequest, steps: int, learner: str
) -> Reservation | Called:
    """The call reserved on every ledger it charges, or refused: past the caller's step
    limit, or by the ledger it would take over its limit."""
    limit = caller.max_steps
    if limit is not None and steps >= limit:
        detail = f"{steps} of {limit} model calls used"
        return Called(refusal=Refusal(EndReason.STEP_LIMIT, detail, "step_limit"))
    expected = caller.expected_output
    if expected is None:
        expected = caller.run.state.estimator.expected_output(learner)
    estimate = CallEstimate(
        request.estimated_prompt_tokens, expected, request.max_tokens, caller.price
    )
    try:
        return reserve_call(caller.ledgers, estimate)
    except BudgetExhausted as exc:
        return Called(refusal=Refusal(EndReason(exc.reason), exc.message, "budget", exc))


_OWN_STEPS = frozenset(("turn", "harness", "judge"))
"""The purposes whose output sizes are the agent's own (`_learner`)."""


def _learner(caller: Caller) -> str:
    """Whose output sizes the estimator learns: the agent's turns, apart from its summaries
    and reflections (a summary's size says nothing of the agent's next step)."""
    if caller.purpose in _OWN_STEPS:
        return caller.agent
    return f"{caller.agent}/{caller.purpose}"


def _teach(caller: Caller, request: ModelRequest, usage: Usage, units: int, learner: str) -> None:
    estimator = caller.run.state.estimator
    estimator.learn(request.model, units, usage.input)
    if usage.input or usage.output:  # a server that reported no usage teaches nothing
        estimator.learn_output(learner, usage.output)


def _record(
    caller: Caller,
    request: ModelRequest,
    called: Called,
    step: int,
    extra: tuple[Measure | None, Mapping[str, object] | None],
) -> None:
    """The call's one `model_called`: a replayed call records 0 tokens paid."""
    answer = called.response
    assert answer is not None
    measure, recorded = extra
    fields: Mapping[str, object] = (
        measure(request)
        if measure is not None
        else {"prompt_tokens": request.estimated_prompt_tokens}
    )
    if recorded:
        fields = {**fields, **recorded}
    usage, paid = answer.usage, called.payment != "replayed"
    calls = answer.tool_calls
    caller.emit(
        ModelCalled,
        model=answer.model or request.model,
        step=step,
        tokens_in=usage.input if paid else 0,
        tokens_out=usage.output if paid else 0,
        tokens_cached=usage.cached_input if paid else 0,
        latency=called.latency,
        cost=called.cost if paid else 0.0,
        finish_reason=answer.finish_reason,
        tool_calls=[c.name for c in calls] if calls else [],
        output_mode=answer.output_mode,
        purpose=caller.purpose,
        payment=called.payment,
        recorded_tokens=0 if paid else usage.total,
        **fields,
    )


async def rails_at(
    caller: Caller, hook: Hook, payload: Any, steps: int, error: BaseException | None = None
) -> Verdict:
    """Run the rails visible to the caller's agent at `hook`, recording a veto."""
    rails = caller.run.deps.rails
    if not rails:
        return Verdict(payload)
    ctx = RailContext(hook, caller.agent, caller.session, steps, payload, error)
    verdict = await rails.run(ctx)
    if verdict.veto is not None:
        caller.emit(RailVetoed, hook=hook.value, rail=verdict.rail, reason=verdict.veto.reason)
    return verdict


def _vetoed(hook: Hook, verdict: Verdict) -> Refusal:
    reason = verdict.veto.reason if verdict.veto is not None else ""
    return Refusal(EndReason.VETOED, f"rail {verdict.rail!r} vetoed {hook.value}: {reason}", "rail")


def capped(request: ModelRequest, cap: int | None) -> ModelRequest:
    """`request`, asking for no more output than the budget's cap allows: a call cut there
    ends as any `length` finish does."""
    if cap is None or request.max_tokens <= cap:
        return request
    return replace(request, max_tokens=cap)
