"""`parallel` over very many branches: started lazily under `limit=`, stopped by the budget,
and refused past the documented maxima, with memory bounded by `limit` and the outcomes."""

from __future__ import annotations

import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from swarmflow import Agent, BudgetExhausted, Cancelled, ConfigError, Failed, Ok, agent, parallel
from swarmflow.operators.parallel import MAX_AT_ONCE, MAX_BRANCHES
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import of_type, run_one

MB = 1 << 20


def ok_model() -> FunctionModel:
    return FunctionModel(lambda req: "ok")


def worker(i: int) -> Awaitable[Any]:
    return agent("w", f"task {i}")


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The peak bytes Python allocated inside the block, in the list it yields."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


async def fan_out(n: int, model: FunctionModel, **options: Any) -> Any:
    async def body() -> list[Any]:
        return await parallel(worker, n=n, **options)

    with anyio.fail_after(60):
        return await run_one([Agent("w")], body, model, budget={"calls": 3})


async def test_a_billion_branches_with_a_limit_are_refused_naming_the_maximum() -> None:
    model = ok_model()
    result = await fan_out(10**9, model, limit=2)
    assert result.status == "failed" and isinstance(result.error, ConfigError)
    assert f"more than the {MAX_BRANCHES:,} one call runs" in str(result.error)
    assert model.requests == []


async def test_a_billion_branches_at_once_are_refused_naming_limit() -> None:
    model = ok_model()
    result = await fan_out(10**9, model)
    assert result.status == "failed" and isinstance(result.error, ConfigError)
    assert f"at most {MAX_AT_ONCE:,} may; give limit=" in str(result.error)
    assert model.requests == []


async def test_a_refused_fan_out_closes_the_awaitables_it_was_given() -> None:
    async def body() -> None:
        with pytest.raises(ConfigError, match="give limit="):
            await parallel(*[agent("w", str(i)) for i in range(MAX_AT_ONCE + 1)])

    result = await run_one([Agent("w")], body, ok_model())  # an unclosed one would warn
    assert result.status == "ok", result.error


def summary(outcomes: list[Any]) -> dict[str, Any]:
    """What a test reads of many outcomes (the run's output stays small)."""
    failed = [o for o in outcomes if isinstance(o, Failed)]
    return {
        "count": len(outcomes),
        "indexes": [o.index for o in outcomes[:4]],
        "ok": [i for i, o in enumerate(outcomes) if isinstance(o, Ok)],
        "budget": all(isinstance(o.error, BudgetExhausted) for o in failed),
        "reasons": sorted({o.error.reason for o in failed}),
        "last_failed": str(failed[-1].error) if failed else "",
        "last": outcomes[-1].branch if outcomes else "",
    }


async def test_under_a_three_call_budget_a_wide_limited_fan_out_starts_three_branches() -> None:
    n, model = 50_000, ok_model()

    async def body() -> dict[str, Any]:
        return summary(await parallel(worker, n=n, limit=2))

    with peak_memory() as peak, anyio.fail_after(60):
        result = await run_one([Agent("w")], body, model, budget={"calls": 3})
    assert result.status == "ok", result.error
    seen = result.output
    assert len(model.requests) == 3
    assert seen["count"] == n and seen["indexes"] == [0, 1, 2, 3]
    assert seen["ok"] == [0, 1, 2]
    assert seen["budget"] and "budget exceeded" in seen["reasons"]
    assert "and the branches after it were not started" in seen["last_failed"]
    assert seen["last"] == f"parallel[{n - 1}]"
    # The branches that never started have no events: only a few branches ran.
    started = [e.branch for e in of_type(result, "branch_finished")]
    assert started[:3] == ["parallel[0]", "parallel[1]", "parallel[2]"] and len(started) <= 6
    assert peak[0] < 50 * MB  # 50,000 branches started at once hold hundreds of MB


async def test_a_branch_stopped_by_the_spent_budget_stops_the_rest() -> None:
    """Two branches in flight reserve the last calls; the one refused after the budget is
    spent says so, and no branch starts after it."""
    calls = 0

    async def branch(i: int) -> str:
        nonlocal calls
        calls += 1
        first = await agent("w", f"first {i}")
        return (await agent("w", f"again {first.text}")).text

    async def body() -> list[Any]:
        return await parallel(branch, n=1_000, limit=2)

    model = ok_model()
    result = await run_one([Agent("w")], body, model, budget={"calls": 3})
    assert result.status == "ok", result.error
    assert len(model.requests) == 3
    assert calls < 10  # the factory ran for the started branches only
    assert all(isinstance(o, Ok | Failed) for o in result.output)
    failed = [o for o in result.output if isinstance(o, Failed)]
    assert {o.error.reason for o in failed} <= {
        "budget exceeded",
        "budget exhausted before model call",
    }


async def test_first_with_a_limit_starts_no_branch_after_the_stop() -> None:
    model = ok_model()

    async def body() -> list[Any]:
        return await parallel(worker, n=10_000, limit=2, first=1)

    result = await run_one([Agent("w")], body, model)
    assert result.status == "ok", result.error
    outcomes = result.output
    assert len(outcomes) == 10_000 and isinstance(outcomes[0], Ok)
    assert all(isinstance(o, Cancelled) for o in outcomes[1:])
    assert len(model.requests) <= 2
    assert len(of_type(result, "branch_finished")) <= 2  # one per branch that started


async def test_the_stream_yields_every_branch_under_a_spent_budget() -> None:
    async def body() -> list[str]:
        kinds = []
        async with parallel.stream(worker, n=200, limit=2) as stream:
            async for outcome in stream:
                kinds.append(type(outcome).__name__)
        return kinds

    model = ok_model()
    result = await run_one([Agent("w")], body, model, budget={"calls": 3})
    assert result.status == "ok", result.error
    assert len(model.requests) == 3
    assert len(result.output) == 200 and result.output.count("Ok") == 3


@pytest.mark.parametrize("split", ["even", [{"calls": 1}] * 4])
async def test_limited_branches_get_their_share_as_they_start(split: Any) -> None:
    spent: list[int | None] = []

    async def branch(i: int) -> str:
        from swarmflow import budget

        spent.append((await budget()).calls)
        return (await agent("w", str(i))).text

    body: Callable[[], Awaitable[list[Any]]] = lambda: parallel(  # noqa: E731
        branch, n=4, limit=1, split=split
    )
    result = await run_one([Agent("w")], body, ok_model(), budget={"calls": 4})
    assert result.status == "ok", result.error
    assert all(isinstance(o, Ok) for o in result.output)
    assert spent == [1, 1, 1, 1]  # each branch's own ledger: one call of the four
