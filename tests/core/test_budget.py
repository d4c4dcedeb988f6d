"""The ledger: reservations before calls, settlement after, children count against ancestors."""

import re

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmflow.core.budget import (
    CallEstimate,
    Charge,
    Ledger,
    Limits,
    all_ledgers,
    reserve_call,
    reserve_on,
)
from swarmflow.core.errors import BudgetExhausted, ConfigError
from swarmflow.core.pricing import Price
from swarmflow.core.tokens import EXPECTED_OUTPUT_FLOOR


def test_reservation_that_does_not_fit_is_refused_before_anything() -> None:
    root = Ledger("run", Limits(tokens=100))
    with pytest.raises(BudgetExhausted) as info:
        reserve_on(all_ledgers([root]), Charge(tokens=101, calls=1))
    assert info.value.reason == "budget exhausted before model call"
    assert root.reserved_tokens == 0 and root.spent_tokens == 0


def test_child_spend_counts_against_every_ancestor() -> None:
    root = Ledger("run", Limits(tokens=1000))
    branch = root.child("b", Limits(tokens=500)).child("c")
    r = reserve_on(all_ledgers([branch]), Charge(tokens=300, calls=1))
    assert root.reserved_tokens == 300
    r.settle(Charge(tokens=120, calls=1))
    assert (root.spent_tokens, root.reserved_tokens, branch.spent_tokens) == (120, 0, 120)
    assert root.snapshot().tokens == 880
    assert branch.snapshot().tokens == 380  # the tighter parent limit wins


def test_ancestor_limit_refuses_even_when_child_has_room() -> None:
    root = Ledger("run", Limits(tokens=100))
    child = root.child("x", Limits(tokens=10_000))
    with pytest.raises(BudgetExhausted, match="run"):
        reserve_on(all_ledgers([child]), Charge(tokens=200))


def test_already_spent_is_budget_exceeded() -> None:
    root = Ledger("run", Limits(calls=1))
    reserve_on(all_ledgers([root]), Charge(calls=1)).settle(Charge(calls=1))
    with pytest.raises(BudgetExhausted) as info:
        reserve_on(all_ledgers([root]), Charge(calls=1))
    assert info.value.reason == "budget exceeded"


def test_overrun_after_call_is_reported() -> None:
    root = Ledger("run", Limits(tokens=100))
    r = reserve_on(all_ledgers([root]), Charge(tokens=90))
    assert r.settle(Charge(tokens=150)) == ["run"]


def test_release_returns_the_reservation() -> None:
    root = Ledger("run", Limits(tokens=100))
    reserve_on(all_ledgers([root]), Charge(tokens=100)).release()
    assert root.snapshot().tokens == 100


def test_wall_clock() -> None:
    now = [0.0]
    root = Ledger("run", Limits(seconds=5), clock=lambda: now[0])
    reserve_on(all_ledgers([root]), Charge(tokens=1)).release()
    now[0] = 6.0
    with pytest.raises(BudgetExhausted) as info:
        reserve_on(all_ledgers([root]), Charge(tokens=1))
    assert info.value.reason == "wall clock"


def test_limits_coerce_rejects_unknown_keys() -> None:
    assert Limits.coerce({"tokens": 5}).tokens == 5
    with pytest.raises(ConfigError, match="tokenz"):
        Limits.coerce({"tokenz": 5})


def test_two_heads_share_ancestors_once() -> None:
    root = Ledger("run", Limits(tokens=100))
    a, b = root.child("branch"), root.child("agent:coder", Limits(tokens=50))
    reserve_on(all_ledgers([a, b]), Charge(tokens=40)).settle(Charge(tokens=40))
    assert root.spent_tokens == 40  # counted once, not twice


Draws = st.lists(st.tuples(st.integers(1, 800), st.integers(0, 1200)), min_size=50, max_size=120)


def _race(limit: int, draws: list[tuple[int, int]], clamp: bool) -> tuple[Ledger, int, bool]:
    """50+ concurrent sessions: reserve, yield to the others, settle random actual usage.

    Returns the ledger, the documented overshoot bound (the sum of how far each call in
    flight at the last admitted reservation ran over its estimate), and whether anything was
    admitted after the limit had been spent.
    """
    root = Ledger("run", Limits(tokens=limit))
    in_flight: dict[int, int] = {}  # call -> how far its actual usage runs over its estimate
    at_last_admission: list[int] = []
    admitted_after_limit = False

    async def session(i: int, estimate: int, actual: int) -> None:
        nonlocal admitted_after_limit, at_last_admission
        spent_before = root.spent_tokens
        try:
            r = reserve_on([root], Charge(tokens=estimate, calls=1))
        except BudgetExhausted:
            return
        admitted_after_limit |= spent_before >= limit
        used = min(actual, estimate) if clamp else actual
        in_flight[i] = max(used - estimate, 0)
        at_last_admission = list(in_flight)
        await anyio.lowlevel.checkpoint()
        r.settle(Charge(tokens=used, calls=1))
        del in_flight[i]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i, (estimate, actual) in enumerate(draws):
                tg.start_soon(session, i, estimate, actual)

    errors = dict(enumerate(max(a - e, 0) for e, a in draws))
    anyio.run(main)
    return root, sum(errors[i] for i in at_last_admission), admitted_after_limit


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(min_value=1_000, max_value=50_000), draws=Draws)
def test_concurrent_spend_within_estimates_never_exceeds_the_limit(
    limit: int, draws: list[tuple[int, int]]
) -> None:
    root, _, _ = _race(limit, draws, clamp=True)
    assert root.spent_tokens <= limit
    assert root.reserved_tokens == 0


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(min_value=1_000, max_value=50_000), draws=Draws)
def test_concurrent_overruns_exceed_only_by_the_errors_of_the_calls_in_flight(
    limit: int, draws: list[tuple[int, int]]
) -> None:
    """The documented bound: real usage above the estimate (drawn here up to 1,200 tokens
    over an estimate of 1 to 800) overshoots by at most the errors of the calls that were in
    flight when the last reservation was admitted."""
    root, bound, admitted_after_limit = _race(limit, draws, clamp=False)
    assert root.spent_tokens <= limit + bound
    assert not admitted_after_limit  # once the limit is reached, nothing more is sent


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(min_value=1_000, max_value=50_000), draws=Draws)
def test_one_session_exceeds_by_at_most_one_estimate_error(
    limit: int, draws: list[tuple[int, int]]
) -> None:
    root = Ledger("run", Limits(tokens=limit))
    worst = 0
    for estimate, actual in draws:
        try:
            r = reserve_on(all_ledgers([root]), Charge(tokens=estimate, calls=1))
        except BudgetExhausted:
            break
        worst = max(worst, actual - estimate)
        r.settle(Charge(tokens=actual, calls=1))
    assert root.spent_tokens <= limit + max(worst, 0)


@settings(max_examples=15, deadline=None)
@given(
    limit=st.integers(min_value=2_000, max_value=40_000),
    outputs=st.lists(st.integers(0, 200), min_size=50, max_size=60),
)
def test_fifty_concurrent_agent_sessions_never_overspend(limit: int, outputs: list[int]) -> None:
    """Through the public API: 50+ sessions in parallel, each drawing random usage; calls
    that would not fit are refused before they are sent, so spend stays within the limit."""
    from swarmflow import Agent, Team, agent, flow, parallel, run
    from swarmflow.core.messages import ModelRequest, Usage
    from swarmflow.testing import FunctionModel, Step

    draws = iter(outputs * 4)

    async def policy(req: ModelRequest) -> Step:
        await anyio.lowlevel.checkpoint()  # let the other sessions interleave
        return Step(
            text="ok", usage=Usage(input=req.estimated_prompt_tokens, output=next(draws, 0))
        )

    @flow(team=Team([Agent("w", max_output_tokens=200)]), budget={"tokens": limit})
    async def fan() -> object:
        async def branch(i: int) -> None:
            for _ in range(3):
                await agent("w", f"task {i}")

        return await parallel(branch, n=len(outputs))

    result = anyio.run(lambda: run(fan, model=FunctionModel(policy), events="memory"))
    spent = result.events[-1].tokens
    assert spent <= limit
    sessions = [e for e in result.events if e.type == "session_ended"]
    calls = sum(1 for e in result.events if e.type == "model_called")
    assert calls == sum(1 for e in sessions if e.reason == "completed")  # refused: never sent
    assert all(
        e.reason in ("completed", "budget exhausted before model call", "budget exceeded")
        for e in result.events
        if e.type == "session_ended"
    )


@settings(max_examples=12, deadline=None)
@given(
    limit=st.integers(min_value=3_000, max_value=30_000),
    factor=st.floats(min_value=1.0, max_value=1.6),
    outputs=st.lists(st.integers(0, 200), min_size=20, max_size=40),
)
def test_concurrent_sessions_counted_above_the_estimate_stay_within_the_bound(
    limit: int, factor: float, outputs: list[int]
) -> None:
    """Through the public API: a server that counts every prompt up to 60% above the prior
    estimate (as for CJK text), 20+ sessions in parallel. Spend past the limit stays within the
    documented bound: the excess of the calls in flight when the last call was admitted."""
    import math

    from swarmflow import Agent, Team, agent, flow, parallel, run
    from swarmflow.core.messages import ModelRequest, Usage
    from swarmflow.core.tokens import estimate_prompt
    from swarmflow.testing import FunctionModel, Step

    draws = iter(outputs * 4)
    in_flight: dict[int, int] = {}  # call -> its real usage above its reservation
    bound_at_admission: list[int] = [0]
    calls = iter(range(10_000))

    async def server(req: ModelRequest) -> Step:
        # Called right after this call's reservation was admitted, before any other task runs.
        call = next(calls)
        real_in = math.ceil(factor * estimate_prompt(req.messages, req.tools))
        out = next(draws, 0)
        in_flight[call] = max(real_in + out - (req.estimated_prompt_tokens + req.max_tokens), 0)
        bound_at_admission[0] = sum(in_flight.values())
        await anyio.lowlevel.checkpoint()  # let the other sessions interleave
        del in_flight[call]
        return Step(text="ok", usage=Usage(input=real_in, output=out))

    @flow(team=Team([Agent("w", max_output_tokens=200)]), budget={"tokens": limit})
    async def fan() -> object:
        async def branch(i: int) -> None:
            for _ in range(3):
                await agent("w", f"任务 {i}: 请修复这个函数中的错误并添加测试。")

        return await parallel(branch, n=len(outputs))

    result = anyio.run(lambda: run(fan, model=FunctionModel(server), events="memory"))
    spent = result.events[-1].tokens
    assert spent <= limit + bound_at_admission[0]


# -- a model call's reservation: the prompt and the expected output, capped to what is left --

CallDraws = st.lists(
    st.tuples(
        st.integers(1, 600),  # the prompt estimate
        st.integers(0, 300),  # how far the real prompt runs over it
        st.integers(256, 3_000),  # the output its agent is expected to write
        st.integers(1, 4_096),  # max_output_tokens
        st.integers(0, 6_000),  # what the model would write if it could (cut at the cap)
    ),
    min_size=30,
    max_size=90,
)


def _call_race(limit: int, draws: list[tuple[int, int, int, int, int]]) -> tuple[Ledger, int]:
    """Concurrent model calls through `reserve_call`, each writing as much as it would, cut
    at its cap. Checks at every admission and refusal what `reserve_call` promises; returns
    the ledger and the documented bound (the excess over their reservations of the calls in
    flight when the last reservation was admitted)."""
    root = Ledger("run", Limits(tokens=limit))
    excess: dict[int, int] = {}
    bound = 0

    async def call(i: int, prompt: int, error: int, expected: int, most: int, wants: int) -> None:
        nonlocal bound
        spent, free = root.spent_tokens, limit - root.spent_tokens - root.reserved_tokens
        try:
            r = reserve_call([root], CallEstimate(prompt, expected, most))
        except BudgetExhausted:
            # Refused only when the room nobody holds cannot take the least useful call.
            assert spent >= limit or free < prompt + min(most, EXPECTED_OUTPUT_FLOOR)
            return
        assert spent < limit  # nothing is admitted once the limit is spent
        assert r.cap is not None and r.cap <= most
        reserved_output = r.charge.tokens - prompt
        assert reserved_output in (
            min(expected, most, free - prompt),
            min(most, EXPECTED_OUTPUT_FLOOR),
        )
        # What the call may write past its reservation is room that no call holds.
        assert r.cap - reserved_output <= limit - root.spent_tokens - root.reserved_tokens
        used = prompt + error + min(wants, r.cap)
        excess[i] = max(used - r.charge.tokens, 0)
        bound = sum(excess.values())
        await anyio.lowlevel.checkpoint()
        r.settle(Charge(tokens=used, calls=1))
        del excess[i]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i, draw in enumerate(draws):
                tg.start_soon(call, i, *draw)

    anyio.run(main)
    return root, bound


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(min_value=500, max_value=60_000), draws=CallDraws)
def test_concurrent_capped_calls_overshoot_only_by_the_excess_of_the_calls_in_flight(
    limit: int, draws: list[tuple[int, int, int, int, int]]
) -> None:
    """Whatever the models write (up to 6,000 tokens, cut at each call's cap) and however far
    their prompts run over the estimate, spend past the limit stays within the bound."""
    root, bound = _call_race(limit, draws)
    assert root.spent_tokens <= limit + bound
    assert root.reserved_tokens == 0


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(min_value=500, max_value=60_000), draws=CallDraws)
def test_one_capped_call_at_a_time_overshoots_only_by_its_prompt_error(
    limit: int, draws: list[tuple[int, int, int, int, int]]
) -> None:
    """Alone in flight, a call may write all of its cap and still not pass the limit by more
    than the tokens its prompt ran over the estimate; with exact estimates, never."""
    exact, off = Ledger("run", Limits(tokens=limit)), Ledger("run", Limits(tokens=limit))
    worst_error = 0
    for prompt, error, expected, most, wants in draws:
        for ledger, err in ((exact, 0), (off, error)):
            try:
                r = reserve_call([ledger], CallEstimate(prompt, expected, most))
            except BudgetExhausted:
                continue
            assert r.cap is not None
            worst_error = max(worst_error, err)
            r.settle(Charge(tokens=prompt + err + min(wants, r.cap), calls=1))
    assert exact.spent_tokens <= limit
    assert off.spent_tokens <= limit + worst_error


def test_a_call_reserves_its_expected_output_and_is_capped_to_what_is_left() -> None:
    root = Ledger("run", Limits(tokens=6_000))
    call = CallEstimate(prompt=50, expected_output=1_024, max_output=4_096)
    first, second, third = (reserve_call([root], call) for _ in range(3))
    assert root.reserved_tokens == 3 * 1_074  # all three fit; whole allowances would not
    assert first.cap == second.cap == 4_096
    assert third.cap == 1_024 + (6_000 - 3 * 1_074)  # what nobody holds, on top of its own
    for r in (first, second, third):
        r.settle(Charge(tokens=80, calls=1))
    assert root.snapshot().tokens == 6_000 - 240


def test_when_little_is_left_a_call_holds_all_of_it() -> None:
    root = Ledger("run", Limits(tokens=1_000))
    reserve_on([root], Charge(tokens=600, calls=1)).settle(Charge(tokens=600, calls=1))
    r = reserve_call([root], CallEstimate(prompt=100, expected_output=1_024, max_output=4_096))
    assert (r.charge.tokens, r.cap) == (400, 300)  # its prompt and all that is left
    assert root.snapshot().tokens == 0


def test_a_cost_limit_caps_the_output_it_can_pay_for() -> None:
    price = Price(input=1.0, cached_input=0.5, output=10.0)  # USD per million tokens
    root = Ledger("run", Limits(cost=0.01))  # $0.01: 1,000 output tokens after no prompt
    r = reserve_call(
        [root], CallEstimate(prompt=1_000, expected_output=256, max_output=4_096, price=price)
    )
    # $0.001 pays the prompt; the other $0.009 pays 900 tokens of output, no more.
    assert r.cap == 900
    assert r.charge.cost == pytest.approx(price.cost_of(1_000, 256))


def test_a_refused_call_says_what_it_needs_what_is_left_and_what_to_change() -> None:
    root = Ledger("run", Limits(tokens=1_000))
    held = reserve_call([root], CallEstimate(prompt=100, expected_output=700, max_output=4_096))
    with pytest.raises(BudgetExhausted) as info:
        reserve_call([root], CallEstimate(prompt=50, expected_output=1_024, max_output=4_096))
    assert info.value.reason == "budget exhausted before model call"
    assert info.value.message == (
        "the next model call (a prompt of about 50 tokens and 256 of output) does not fit "
        "ledger 'run': it needs 306 tokens and 200 of its 1000 tokens are left (0 spent, 800 "
        "held by 1 call(s) in flight); raise the run's budget tokens (budget={'tokens': ...}), "
        "or lower max_output_tokens to 150 or less"
    )
    held.release()


@pytest.mark.parametrize(
    ("name", "remedy"),
    [
        ("run/agent:coder", "raise the allowance of agent 'coder'"),
        ("batch", "raise the batch budget's tokens"),
        ("run/team", "raise the team's tokens limit"),
        (
            "run/parallel[1]",
            "give 'parallel[1]' more tokens (its split share or its flow's budget)",
        ),
    ],
)
def test_a_refusal_names_what_to_raise(name: str, remedy: str) -> None:
    ledger = Ledger(name, Limits(tokens=10))
    with pytest.raises(BudgetExhausted, match=re.escape(remedy)):
        reserve_call([ledger], CallEstimate(prompt=20, expected_output=256, max_output=4_096))


@settings(max_examples=10, deadline=None)
@given(
    limit=st.integers(min_value=3_000, max_value=40_000),
    factor=st.floats(min_value=1.0, max_value=1.6),
    wants=st.lists(st.integers(0, 6_000), min_size=20, max_size=30),
)
def test_parallel_sessions_writing_up_to_their_cap_stay_within_the_bound(
    limit: int, factor: float, wants: list[int]
) -> None:
    """Through the public API, with the default `max_output_tokens` (4,096): 20+ sessions in
    parallel, a server that counts prompts up to 60% above the estimate and writes what it
    wants cut at the request's `max_tokens`. Each call's reservation is read from inside the
    call (`budget()`: the limit less spend and what the calls in flight hold). Checked: what a
    call may write past its reservation is room no call holds, and spend past the limit stays
    within the excess of the calls in flight when the last call was admitted."""
    import math

    from swarmflow import Agent, Team, agent, budget, flow, parallel, run
    from swarmflow.core.messages import ModelRequest, Usage
    from swarmflow.core.tokens import estimate_prompt
    from swarmflow.testing import FunctionModel, Step

    draws = iter(wants * 3)
    spent = [0]  # settled spend, as the ledger settles it: right when a call returns
    holds: dict[int, int] = {}  # call -> its reservation, while it is in flight
    excess: dict[int, int] = {}  # call -> its real usage past its reservation
    bound = [0]
    calls = iter(range(10_000))

    async def server(req: ModelRequest) -> Step:
        # Runs right after this call's reservation was admitted, before any other task.
        call = next(calls)
        left = (await budget()).tokens
        assert left is not None
        mine = limit - spent[0] - left - sum(holds.values())
        assert req.max_tokens - (mine - req.estimated_prompt_tokens) <= left
        real_in = math.ceil(factor * estimate_prompt(req.messages, req.tools))
        out = min(next(draws, 0), req.max_tokens)
        holds[call], excess[call] = mine, max(real_in + out - mine, 0)
        bound[0] = sum(excess.values())
        await anyio.lowlevel.checkpoint()  # let the other sessions interleave
        del holds[call], excess[call]
        spent[0] += real_in + out
        return Step(text="ok", usage=Usage(input=real_in, output=out))

    @flow(team=Team([Agent("w")]), budget={"tokens": limit})
    async def fan() -> object:
        async def branch(i: int) -> None:
            for _ in range(3):
                await agent("w", f"task {i}: fix the failing test and explain the change")

        return await parallel(branch, n=len(wants))

    result = anyio.run(lambda: run(fan, model=FunctionModel(server), events="memory"))
    assert result.events[-1].tokens == spent[0]
    assert spent[0] <= limit + bound[0]
