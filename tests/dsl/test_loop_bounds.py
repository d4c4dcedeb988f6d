"""Loops and fan-outs with huge bounds: counted lazily, stopped by the budget and the deadline."""

from __future__ import annotations

import tracemalloc
from typing import Any

import anyio

from swarmflow import BudgetExhausted, RunResult, run
from swarmflow.dsl import DslError, check_source, load_source
from swarmflow.testing import FunctionModel

MB = 1 << 20


async def run_flow(source: str, model: Any = None, **inputs: Any) -> tuple[RunResult, int]:
    """Run `source` with `inputs` under an outer bound; the result and the peak bytes."""
    tracemalloc.start()
    try:
        with anyio.fail_after(60):
            result = await run(
                load_source(source, "t.swarm"),
                model=model or FunctionModel(lambda req: "ok"),
                raise_on_failure=False,
                **inputs,
            )
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


A_BILLION_ROUNDS = """flow f(n: int) -> str
budget calls 3
agent a {}
steps {
  x = "start"
  repeat min(n, 1G) {
    x = a("go on from {x}").text
  }
  return x
}
"""


async def test_a_billion_rounds_under_three_calls_end_after_three_calls() -> None:
    model = FunctionModel(lambda req: "ok")
    result, peak = await run_flow(A_BILLION_ROUNDS, model, n=10**9)
    assert len(model.requests) == 3
    assert result.status == "failed" and isinstance(result.error, BudgetExhausted)
    assert result.error.reason == "budget exceeded"
    assert "the loop at line 6 stopped before round 4" in str(result.error)
    assert peak < 50 * MB  # the rounds are counted, not built as a list


SWALLOWING = """flow f(n: int) -> int
budget calls 3
agent a {}
steps {
  tries = 0
  repeat min(n, 1G) {
    outs = parallel(2) |i| { a("try {i}") }
    tries = tries + 1
  }
  return tries
}
"""


async def test_a_loop_whose_failures_are_outcomes_still_stops_when_the_budget_is_spent() -> None:
    """The refused calls become `Failed` outcomes, so only the loop itself can stop."""
    model = FunctionModel(lambda req: "ok")
    result, _ = await run_flow(SWALLOWING, model, n=10**9)
    assert len(model.requests) == 3
    assert isinstance(result.error, BudgetExhausted), result.error
    assert result.error.reason == "budget exceeded"


AFTER_THE_BUDGET = """flow f(task: str) -> int
budget calls 2
agent a {}
steps {
  outs = parallel(2) |i| { a("draft {i}").text }
  total = 0
  for draft in compact(outs) {
    total = total + len(draft)
  }
  return total
}
"""


async def test_a_loop_that_calls_no_model_runs_after_the_budget_is_spent() -> None:
    result, _ = await run_flow(AFTER_THE_BUDGET, task="t")
    assert result.status == "ok", result.error
    assert result.output == 4


COMPUTE_ONLY = """flow f(task: str) -> int
budget time 1s
steps {
  x = 0
  repeat 1G {
    x = x + 1
  }
  return x
}
"""


async def test_a_loop_that_only_computes_is_stopped_by_the_wall_clock() -> None:
    result, _ = await run_flow(COMPUTE_ONLY, task="t")
    assert result.status == "failed" and isinstance(result.error, BudgetExhausted)
    assert result.error.reason == "wall clock"


async def test_a_loop_that_only_computes_is_stopped_by_a_cancel_scope_around_the_run() -> None:
    with anyio.move_on_after(0.05) as scope:
        await run(load_source(COMPUTE_ONLY.replace("budget time 1s", ""), "t.swarm"), task="t")
    assert scope.cancelled_caught


INFINITE = """flow f(n: float) -> int
steps {
  outs = parallel(n) |i| { i }
  return len(outs)
}
"""


async def test_an_infinite_count_is_a_located_error() -> None:
    result, _ = await run_flow(INFINITE, n=float("inf"))
    assert isinstance(result.error, DslError)
    assert "t.swarm:3:19: error: parallel(n) needs a finite number of branches" in str(result.error)


WIDE = """flow f(n: int) -> int
budget calls 3
agent a {}
steps {
  outs = parallel(min(n, 1G), limit: 2) |i| { a("branch {i}").text }
  return len(outs)
}
"""


async def test_a_limited_fan_out_under_three_calls_makes_three_calls_and_ends() -> None:
    model = FunctionModel(lambda req: "ok")
    result, peak = await run_flow(WIDE, model, n=50_000)
    assert result.status == "ok", result.error
    assert result.output == 50_000 and len(model.requests) == 3
    assert peak < 50 * MB  # the branches start as slots free up, not all at once


async def test_a_billion_branches_are_a_located_error_before_any_call() -> None:
    model = FunctionModel(lambda req: "ok")
    result, _ = await run_flow(WIDE, model, n=10**9)
    assert isinstance(result.error, DslError) and model.requests == []
    header = str(result.error).splitlines()[0]
    assert header.startswith("t.swarm:5:19: error: parallel(n): 1,000,000,000 branches is ")
    assert "more than the 1,000,000 one call runs" in header


def test_check_refuses_a_fan_out_wider_than_one_call_runs() -> None:
    source = WIDE.replace("min(n, 1G), limit: 2", "200k")
    found = [d for d in check_source(source, "t.swarm") if d.code == "misuse"]
    assert [(d.severity, d.line, d.column) for d in found] == [("error", 5, 10)]
    assert "200,000 branches would all start at once" in found[0].message
    assert "give limit: to start them" in found[0].message


def test_check_warns_when_a_fan_out_may_be_wider_than_one_call_runs() -> None:
    found = [d for d in check_source(WIDE, "t.swarm") if d.code == "misuse"]
    assert [(d.severity, d.line) for d in found] == [("warning", 5)]
    assert "(n is at most 1G here)" in found[0].message
