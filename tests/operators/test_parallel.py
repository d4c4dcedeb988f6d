"""`parallel`: outcomes in order, failures as data, early stop, budget splits, streaming."""

from __future__ import annotations

import anyio

from swarmflow import (
    Agent,
    BudgetExhausted,
    Cancelled,
    Empty,
    Failed,
    Ok,
    agent,
    budget,
    parallel,
)
from swarmflow.core.errors import ModelUnavailable
from swarmflow.core.messages import ModelRequest, Usage
from swarmflow.testing import FunctionModel, Step
from tests.runtime.helpers import of_type, run_one


async def test_outcomes_in_submission_order_and_failures_are_data() -> None:
    async def branch(i: int) -> object:
        if i == 1:
            raise ModelUnavailable("branch one broke")
        if i == 2:
            return None
        return (await agent("w", f"task {i}")).text

    model = FunctionModel(lambda req: f"done {req.prompt}")
    result = await run_one([Agent("w")], lambda: parallel(branch, n=4), model)
    outcomes = result.output
    assert [type(o) for o in outcomes] == [Ok, Failed, Empty, Ok]
    assert outcomes[0].value == "done task 0" and outcomes[3].value == "done task 3"
    assert "branch one broke" in str(outcomes[1].error)
    kinds = {e.branch: e.outcome for e in of_type(result, "branch_finished")}
    assert kinds == {
        "parallel[0]": "ok",
        "parallel[1]": "failed",
        "parallel[2]": "empty",
        "parallel[3]": "ok",
    }


async def test_awaitables_form() -> None:
    model = FunctionModel(lambda req: req.prompt.upper())

    async def body() -> list[object]:
        return await parallel(agent("w", "a"), agent("w", "b"))

    result = await run_one([Agent("w")], body, model)
    assert [o.value.text for o in result.output] == ["A", "B"]


async def test_first_k_cancels_the_rest_and_records_them() -> None:
    release = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        if req.prompt != "fast":
            await release.wait()  # the slow branches never get to answer
        return "ok"

    async def body() -> list[object]:
        return await parallel(agent("w", "slow"), agent("w", "fast"), agent("w", "slow"), first=1)

    result = await run_one([Agent("w")], body, FunctionModel(policy))
    assert [type(o) for o in result.output] == [Cancelled, Ok, Cancelled]
    ended = of_type(result, "session_ended")
    assert sorted(e.reason for e in ended)[-1] == "completed"
    assert all(e.reason == "cancelled" for e in ended[:-1] if e.state == "stopped")
    branches = {e.branch: e.outcome for e in of_type(result, "branch_finished")}
    assert branches == {"parallel[0]": "cancelled", "parallel[1]": "ok", "parallel[2]": "cancelled"}


async def test_failing_branch_never_cancels_siblings() -> None:
    gate = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        if req.prompt == "bad":
            gate.set()
            raise ModelUnavailable("model blew up")
        await gate.wait()  # finishes only after its sibling has failed
        return "fine"

    async def body() -> list[object]:
        return await parallel(agent("w", "bad"), agent("w", "good"))

    result = await run_one([Agent("w")], body, FunctionModel(policy))
    assert isinstance(result.output[0], Failed) and isinstance(result.output[1], Ok)


async def test_limit_bounds_concurrency() -> None:
    running, peak = 0, 0
    step = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.lowlevel.checkpoint()
        running -= 1
        step.set()
        return "ok"

    await run_one(
        [Agent("w")],
        lambda: parallel(lambda i: agent("w", str(i)), n=10, limit=3),
        FunctionModel(policy),
    )
    assert peak <= 3


def _costly(req: ModelRequest) -> Step:
    return Step(text="ok", usage=Usage(input=400, output=100))


async def test_even_split_refuses_before_sending_when_a_branch_share_is_spent() -> None:
    model = FunctionModel(_costly)

    async def branch(i: int) -> list[str]:
        out = []
        for _ in range(10):
            out.append((await agent("w", f"{i}")).text)
        return out

    result = await run_one(
        [Agent("w", max_output_tokens=100)],
        lambda: parallel(branch, n=2, split="even"),
        model,
        budget={"tokens": 4_000},
    )
    outcomes = result.output
    assert all(isinstance(o, Failed) for o in outcomes)
    assert all(isinstance(o.error, BudgetExhausted) for o in outcomes)
    reasons = {o.error.reason for o in outcomes}
    assert reasons <= {"budget exhausted before model call", "budget exceeded"}
    spent = of_type(result, "run_finished")[0].tokens
    assert spent <= 4_000
    assert len(model.requests) == spent // 500  # every refused call was never sent


async def test_shared_split_refuses_once_the_pool_is_spent() -> None:
    model = FunctionModel(_costly)

    async def branch(i: int) -> int:
        done = 0
        while True:
            await agent("w", f"{i}")
            done += 1

    result = await run_one(
        [Agent("w", max_output_tokens=100)],
        lambda: parallel(branch, n=3),
        model,
        budget={"tokens": 5_000},
    )
    assert all(
        isinstance(o, Failed) and isinstance(o.error, BudgetExhausted) for o in result.output
    )
    assert of_type(result, "run_finished")[0].tokens <= 5_000
    assert len(model.requests) * 500 == of_type(result, "run_finished")[0].tokens


async def test_explicit_split_and_budget_seen_from_a_branch() -> None:
    async def branch(i: int) -> int | None:
        return (await budget()).tokens

    result = await run_one(
        [Agent("w")],
        lambda: parallel(branch, n=2, split=[{"tokens": 100}, {"tokens": 300}]),
        FunctionModel(lambda r: "x"),
        budget={"tokens": 1_000},
    )
    assert [o.value for o in result.output] == [100, 300]


async def test_stream_yields_in_completion_order() -> None:
    fast_done = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        if req.prompt == "slow":
            await fast_done.wait()
        return req.prompt

    async def body() -> list[str]:
        order = []
        async for outcome in parallel.stream(agent("w", "slow"), agent("w", "fast")):
            order.append(outcome.value.text)
            fast_done.set()
        return order

    result = await run_one([Agent("w")], body, FunctionModel(policy))
    assert result.output == ["fast", "slow"]


async def test_nonsense_options_are_clear_errors() -> None:
    for bad in ({"limit": 0}, {"first": 0}):
        result = await run_one(
            [Agent("w")],
            lambda bad=bad: parallel(lambda i: agent("w", "x"), n=2, **bad),
            FunctionModel(lambda r: "ok"),
        )
        assert result.status == "failed" and next(iter(bad)) in str(result.error)


async def test_a_team_with_an_edge_to_nobody_does_not_start() -> None:
    import pytest

    from swarmflow import ConfigError, Team, flow, run

    @flow(team=Team([Agent("a")], edges=[("a", "ghost")]))
    async def f() -> None:
        return None

    with pytest.raises(ConfigError, match="ghost"):
        await run(f, model=FunctionModel(lambda r: ""))


async def test_a_fan_out_wider_than_a_start_batch_has_every_branch_in_flight_at_once() -> None:
    """Branches start `START_BATCH` at a time, yet all of them are waiting together: no model
    call answers until every branch has made its own."""
    from swarmflow.operators._branches import START_BATCH

    n = 2 * START_BATCH + 5
    arrived = 0
    everyone = anyio.Event()

    async def policy(_req: ModelRequest) -> str:
        nonlocal arrived
        arrived += 1
        if arrived == n:
            everyone.set()
        await everyone.wait()
        return "done"

    result = await run_one(
        [Agent("w")], lambda: parallel(lambda i: agent("w", f"t{i}"), n=n), FunctionModel(policy)
    )
    assert [type(o) for o in result.output] == [Ok] * n
    assert [o.index for o in result.output] == list(range(n))


async def test_first_k_past_a_start_batch_leaves_the_rest_cancelled() -> None:
    from swarmflow.operators._branches import START_BATCH

    n = 3 * START_BATCH
    model = FunctionModel(lambda req: f"done {req.prompt}")
    result = await run_one(
        [Agent("w")], lambda: parallel(lambda i: agent("w", f"t{i}"), n=n, first=2), model
    )
    kinds = [type(o) for o in result.output]
    assert kinds.count(Ok) >= 2 and set(kinds) <= {Ok, Cancelled}
    assert kinds[-1] is Cancelled  # the last batch never started
    assert len(result.output) == n


async def test_a_finished_session_is_freed_without_the_garbage_collector() -> None:
    """A session's parts record events through the log, not through the session: nothing
    of a finished branch waits for the cycle collector (at 10,000 branches it took about a
    tenth of the run's CPU time)."""
    import gc

    from swarmflow.sessions.session import AgentSession

    model = FunctionModel(lambda req: "done")
    gc.collect()
    # Sessions an earlier test in this process still holds are not this run's.
    earlier = {id(o) for o in gc.get_objects() if isinstance(o, AgentSession)}
    gc.disable()
    try:
        await run_one([Agent("w")], lambda: parallel(lambda i: agent("w", f"t{i}"), n=20), model)
        left = [o for o in gc.get_objects() if isinstance(o, AgentSession) and id(o) not in earlier]
    finally:
        gc.enable()
    assert left == []
