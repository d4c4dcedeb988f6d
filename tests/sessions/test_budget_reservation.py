"""A model call reserves what it is expected to use and is capped to what the budget has left.

With `budget={"tokens": 8_000}` three parallel researchers once reserved prompt + 4,096 each:
two were refused while the run spent a few hundred tokens, and only when the calls overlapped.
A call now reserves its prompt and its agent's expected output, and its `max_tokens` is lowered
to what the budget can still pay for, so the outcome no longer depends on the timing.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import anyio
import pytest

from swarmflow import Agent, Failed, agent, budget, parallel
from swarmflow.core.errors import BudgetExhausted
from swarmflow.core.messages import ModelRequest, ModelResponse, Usage
from swarmflow.core.tokens import EXPECTED_OUTPUT_FLOOR, EXPECTED_OUTPUT_PRIOR
from swarmflow.rails import Amend, Hook, RailContext, rail
from swarmflow.testing import FunctionModel, Step
from tests.runtime.helpers import of_type, run_one

RESEARCHER = Agent("researcher")  # the default max_output_tokens, 4,096


class Gate:
    """Holds every model call until each of `n` branches has called the model or ended, so
    that every call that is admitted is reserved before any settles."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.arrived = 0
        self.ended = 0
        self.opened = anyio.Event()

    def _check(self) -> None:
        if self.arrived + self.ended >= self.n:
            self.opened.set()

    async def call(self, request: ModelRequest) -> Step:
        self.arrived += 1
        self._check()
        await self.opened.wait()
        return _notes(request)

    def branch_ended(self) -> None:
        self.ended += 1  # a refused branch never arrives; once open this changes nothing
        self._check()


def _notes(request: ModelRequest) -> Step:
    usage = Usage(input=request.estimated_prompt_tokens, output=25)
    return Step(text=f"notes on {request.prompt}", usage=usage)


async def _three_researchers(together: bool) -> Any:
    gate = Gate(3)

    async def research(i: int) -> str:
        try:
            return (await agent("researcher", f"topic {i}")).text
        finally:
            gate.branch_ended()

    model = FunctionModel(gate.call if together else _notes)
    result = await run_one(
        [RESEARCHER],
        lambda: parallel(research, n=3),
        model,
        budget={"tokens": 8_000},
    )
    return result, gate


@pytest.mark.parametrize("together", [True, False], ids=["all-reserve-first", "one-by-one"])
async def test_three_parallel_researchers_fit_a_small_budget_however_they_interleave(
    together: bool,
) -> None:
    result, gate = await _three_researchers(together)
    assert all(o.ok for o in result.output), result.output
    assert [o.value for o in result.output] == [f"notes on topic {i}" for i in range(3)]
    if together:
        assert gate.arrived == 3  # all three were in flight, reserved, before any settled
    reasons = {e.reason for e in of_type(result, "session_ended")}
    assert reasons == {"completed"}
    spent = of_type(result, "run_finished")[0].tokens
    assert spent < 8_000 / 30  # a budget thirty times the spend refuses nothing


async def test_the_reservation_is_the_prompt_and_the_expected_output_learned_per_agent() -> None:
    """Seen from inside each call: what the budget has left while that call is in flight."""
    limit = 50_000
    left: list[int] = []
    writes = iter([40, 40, 600, 40])

    async def policy(request: ModelRequest) -> Step:
        snapshot = await budget()
        assert snapshot.tokens is not None
        left.append(snapshot.tokens + snapshot.spent_tokens)  # limit less what this call holds
        usage = Usage(input=request.estimated_prompt_tokens, output=next(writes))
        return Step(text="ok", usage=usage)

    async def body() -> None:
        for i in range(4):
            await agent("researcher", f"question {i}")

    model = FunctionModel(policy)
    result = await run_one([RESEARCHER], body, model, budget={"tokens": limit})
    assert result.status == "ok", result.error
    held = [limit - figure for figure in left]
    prompts = [r.estimated_prompt_tokens for r in model.requests]
    outputs = [h - p for h, p in zip(held, prompts, strict=True)]
    # The prior before the agent's first call; then the most of its recent calls, at least
    # the floor: 40 and 40 are below it, 600 is the most so far.
    assert outputs == [EXPECTED_OUTPUT_PRIOR, EXPECTED_OUTPUT_FLOOR, EXPECTED_OUTPUT_FLOOR, 600]
    assert all(r.max_tokens == 4096 for r in model.requests)  # the budget is far from spent


class Verbose:
    """A model that would write `wants` tokens and is cut at `max_tokens`, as a server is."""

    is_test_model = True

    def __init__(self, wants: int) -> None:
        self.name = "verbose"
        self.wants = wants
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        out = min(self.wants, request.max_tokens)
        return ModelResponse(
            text="word " * out,
            usage=Usage(input=request.estimated_prompt_tokens, output=out),
            finish_reason="length" if out < self.wants else "stop",
            model=self.name,
        )


async def test_max_tokens_is_capped_to_what_is_left_and_a_cut_call_completes() -> None:
    model = Verbose(wants=10_000)
    result = await run_one(
        [RESEARCHER], lambda: agent("researcher", "write it all"), model, budget={"tokens": 3_000}
    )
    (request,) = model.requests
    assert request.max_tokens == 3_000 - request.estimated_prompt_tokens
    called = of_type(result, "model_called")[0]
    assert (called.finish_reason, called.tokens_out) == ("length", request.max_tokens)
    # A call cut at its cap is a `length` finish like any other: its text is the answer.
    assert result.status == "ok", result.error
    assert result.output.text == "word " * request.max_tokens
    assert of_type(result, "session_ended")[0].reason == "completed"
    assert of_type(result, "run_finished")[0].tokens == 3_000  # to the token, never past it


async def test_calls_that_write_all_they_may_never_take_spend_past_the_limit() -> None:
    """One call at a time, each writing as much as it is let: with an exact prompt estimate
    each call's prompt and cap are exactly what is left, so the spend reaches the limit and
    never passes it; the call that then finds it spent is refused."""
    model = Verbose(wants=1_700)

    async def body() -> None:
        for i in range(5):
            await agent("researcher", f"part {i}")

    result = await run_one([RESEARCHER], body, model, budget={"tokens": 4_000})
    assert isinstance(result.error, BudgetExhausted)
    assert result.error.reason == "budget exceeded"
    called = of_type(result, "model_called")
    spent_before = [sum(e.tokens_in + e.tokens_out for e in called[:i]) for i in range(3)]
    assert len(model.requests) == 3
    for request, spent in zip(model.requests, spent_before, strict=True):
        assert request.estimated_prompt_tokens + request.max_tokens == 4_000 - spent
    assert [e.finish_reason for e in called] == ["stop", "stop", "length"]
    assert of_type(result, "run_finished")[0].tokens == 4_000


def _refusal(result: Any) -> str:
    assert isinstance(result.error, BudgetExhausted), result.error
    assert result.error.reason == "budget exhausted before model call"
    ended = of_type(result, "session_ended")[0]
    assert (ended.state, ended.reason) == ("stopped", "budget exhausted before model call")
    assert not of_type(result, "model_called")  # nothing was sent
    return str(ended.detail)


async def test_a_refusal_says_what_one_call_needs_what_is_left_and_what_to_change() -> None:
    model = FunctionModel(lambda request: "ok")
    result = await run_one(
        [RESEARCHER], lambda: agent("researcher", "go"), model, budget={"tokens": 200}
    )
    detail = _refusal(result)
    pattern = (
        r"the next model call \(a prompt of about (\d+) tokens and 256 of output\) does not "
        r"fit ledger 'run': it needs (\d+) tokens and 200 of its 200 tokens are left \(0 spent\); "
        r"raise the run's budget tokens \(budget=\{'tokens': \.\.\.\}\), or lower "
        r"max_output_tokens to (\d+) or less"
    )
    found = re.fullmatch(pattern, detail)
    assert found, detail
    prompt, needs, lower_to = map(int, found.groups())
    assert needs == prompt + EXPECTED_OUTPUT_FLOOR and lower_to == 200 - prompt

    # The advice works: with max_output_tokens lowered so, the call fits and is sent.
    frugal = Agent("researcher", max_output_tokens=lower_to)
    again = await run_one(
        [frugal], lambda: agent("researcher", "go"), model, budget={"tokens": 200}
    )
    assert again.status == "ok", again.error
    assert model.requests[-1].max_tokens == lower_to


async def test_a_refusal_by_an_allowance_names_the_allowance() -> None:
    tight = Agent("researcher", allowance=100)
    result = await run_one([tight], lambda: agent("researcher", "go"), FunctionModel(str))
    detail = _refusal(result)
    assert "does not fit ledger 'run/agent:researcher'" in detail
    assert "100 of its 100 tokens are left" in detail
    assert "raise the allowance of agent 'researcher'" in detail


async def test_a_refusal_while_calls_are_in_flight_says_what_they_hold() -> None:
    gate = Gate(2)

    async def research(i: int) -> str:
        try:
            return (await agent("researcher", f"topic {i}")).text
        finally:
            gate.branch_ended()

    small = Agent("researcher", max_output_tokens=300)
    result = await run_one(
        [small], lambda: parallel(research, n=2), FunctionModel(gate.call), budget={"tokens": 500}
    )
    ok, refused = result.output
    assert ok.ok and ok.value == "notes on topic 0" and isinstance(refused, Failed)
    assert isinstance(refused.error, BudgetExhausted)
    assert re.search(r"\(0 spent, \d+ held by 1 call\(s\) in flight\)", refused.error.message)


async def test_a_rail_cannot_lift_the_cap() -> None:
    def greedy(ctx: RailContext) -> Amend:
        return Amend(replace(ctx.payload, max_tokens=1_000_000))

    model = Verbose(wants=10_000)
    rails = [rail("greedy", [Hook.BEFORE_MODEL_CALL], greedy)]
    result = await run_one(
        [RESEARCHER],
        lambda: agent("researcher", "go"),
        model,
        budget={"tokens": 2_000},
        rails=rails,
    )
    (request,) = model.requests
    assert request.max_tokens == 2_000 - request.estimated_prompt_tokens
    assert of_type(result, "run_finished")[0].tokens == 2_000
