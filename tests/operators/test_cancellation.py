"""Cancel scopes, deadlines and wall-clock budgets around and inside every operator.

Each test waits on events, never on sleeps: a deadline that must fire is already in the past
or is reached while the flow waits on an event nobody sets.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import (
    Agent,
    BudgetExhausted,
    Cancelled,
    FlowFailed,
    Ok,
    Team,
    agent,
    agent_session,
    compact,
    flow,
    human,
    parallel,
    pipeline,
    run,
    run_sync,
)
from swarmflow.record.events import EventBase
from swarmflow.record.sinks import MemorySink
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import of_type, run_one

NEVER = anyio.Event  # an event nobody sets: waiting on it blocks until cancelled


def echo() -> FunctionModel:
    return FunctionModel(lambda req: f"done {req.prompt}")


async def blocked_branch(i: int) -> str:
    await NEVER().wait()
    return "unreachable"


# -- cancel scopes around every operator, inside a flow ----------------------------------------


async def test_move_on_after_around_parallel_moves_on() -> None:
    async def body() -> str:
        with anyio.move_on_after(0) as scope:
            await parallel(blocked_branch, n=3)
        return f"moved on: {scope.cancelled_caught}"

    result = await run_one([Agent("w")], body, echo())
    assert result.status == "ok" and result.output == "moved on: True"
    assert {e.outcome for e in of_type(result, "branch_finished")} == {"cancelled"}


async def test_fail_after_around_parallel_raises_timeout_error_in_the_flow() -> None:
    async def body() -> str:
        try:
            with anyio.fail_after(0):
                await parallel(blocked_branch, n=2)
        except TimeoutError:
            return "timed out"
        return "not reached"

    result = await run_one([Agent("w")], body, echo())
    assert result.output == "timed out"


async def test_cancel_scope_around_each_operator() -> None:
    """A cancelled scope around parallel, its stream, pipeline, agent, a session and human."""

    async def stuck_stage(x: object) -> object:
        await NEVER().wait()
        return x

    async def body() -> list[bool]:
        caught = []
        with anyio.move_on_after(0) as s1:
            await parallel(blocked_branch, n=2)
        caught.append(s1.cancelled_caught)
        with anyio.move_on_after(0) as s2:
            async with parallel.stream(blocked_branch, n=2) as stream:
                async for _ in stream:
                    pass
        caught.append(s2.cancelled_caught)
        with anyio.move_on_after(0) as s3:
            async for _ in pipeline([1, 2], stuck_stage):
                pass
        caught.append(s3.cancelled_caught)
        with anyio.CancelScope() as s4:
            s4.cancel()
            await agent("w", "never sent")
        caught.append(s4.cancelled_caught)
        async with agent_session("w") as session:
            with anyio.CancelScope() as s5:
                s5.cancel()
                await session.send("never sent")
        caught.append(s5.cancelled_caught)
        with anyio.move_on_after(0) as s6:
            await human("Approve?")
        caught.append(s6.cancelled_caught)
        return caught

    calls: list[str] = []

    def model(req: Any) -> str:
        calls.append(req.prompt)
        return "x"

    async def slow_person(question: str, payload: object) -> str:
        await NEVER().wait()
        return "yes"

    result = await run_one(
        [Agent("w")], body, FunctionModel(model), edges=[], human=_Channel(slow_person)
    )
    assert result.status == "ok", result.error
    assert result.output == [True] * 6
    assert calls == []  # no model call started inside a cancelled scope


async def test_branches_inherit_the_deadline_of_the_scope_that_started_them() -> None:
    seen: list[float] = []

    async def branch(i: int) -> float:
        seen.append(anyio.current_effective_deadline())
        return i

    async def body() -> float:
        with anyio.move_on_after(3600) as outer:
            await parallel(branch, n=3)
            async with parallel.stream(branch, n=2) as stream:
                [o async for o in stream]
            [o async for o in pipeline([1], branch)]
        return outer.deadline

    result = await run_one([], body, echo())
    assert len(seen) == 6 and set(seen) == {result.output}
    assert result.output != math.inf


async def test_a_cancel_scope_inside_a_branch_ends_only_what_it_wraps() -> None:
    async def branch(i: int) -> str:
        with anyio.move_on_after(0):
            await agent("w", "never sent")
        return (await agent("w", f"after {i}")).text

    result = await run_one([Agent("w")], lambda: parallel(branch, n=2), echo())
    assert [o.value for o in result.output] == ["done after 0", "done after 1"]


# -- around run() ------------------------------------------------------------------------------


async def test_cancel_scope_around_run_cancels_it_and_closes_the_log_once(tmp_path: Path) -> None:
    started = anyio.Event()

    @flow(team=Team([Agent("w")]))
    async def stuck() -> None:
        async def branch(i: int) -> None:
            started.set()
            await NEVER().wait()

        await parallel(branch, n=3)

    memory = MemorySink()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(stuck, model=echo(), events=[memory], runs_root=tmp_path))
        await started.wait()
        tg.cancel_scope.cancel()
    finished = [e for e in memory.events if e.type == "run_finished"]
    assert len(finished) == 1 and finished[0].status == "cancelled"
    assert memory.events[-1] is finished[0]


async def test_move_on_after_around_run_moves_on() -> None:
    @flow
    async def stuck() -> None:
        await NEVER().wait()

    with anyio.move_on_after(0) as scope:
        await run(stuck, model=echo(), events="memory")
    assert scope.cancelled_caught


# -- wall-clock budgets ------------------------------------------------------------------------


def test_wall_clock_budget_inside_parallel_is_a_failed_run_not_an_exception() -> None:
    @flow(team=Team([Agent("w")]), budget={"seconds": 0.0})
    async def slow() -> object:
        return await parallel(blocked_branch, n=4)

    with pytest.raises(FlowFailed) as failed:
        run_sync(slow, model=echo(), events="memory")
    result = failed.value.result
    assert result.status == "failed"
    assert isinstance(result.error, BudgetExhausted) and result.error.reason == "wall clock"
    assert failed.value.__cause__ is result.error
    again = run_sync(slow, model=echo(), events="memory", raise_on_failure=False)
    assert again.status == "failed" and again.error.reason == "wall clock"  # type: ignore[union-attr]


async def test_a_branch_deadline_is_a_failed_branch_and_the_run_goes_on() -> None:
    async def branch(i: int) -> str:
        if i == 0:
            with anyio.fail_after(0):
                await NEVER().wait()
        return "fine"

    result = await run_one([], lambda: parallel(branch, n=2), echo())
    first, second = result.output
    assert isinstance(first.error, TimeoutError) and second.value == "fine"


# -- streams belong to the branch that opened them ---------------------------------------------


class _Alive:
    """Counts stream items in flight; the sink checks it when a branch's outcome is recorded."""

    def __init__(self) -> None:
        self.alive = 0
        self.all_started = anyio.Event()
        self.at_record: dict[str, int] = {}

    async def item(self, i: int) -> str:
        self.alive += 1
        if self.alive == 3:
            self.all_started.set()
        try:
            await NEVER().wait()
            return (await agent("w", f"late {i}")).text
        finally:
            self.alive -= 1

    def write(self, event: EventBase | None, line: bytes) -> None:
        if event is not None and event.type == "branch_finished" and "/" not in event.branch:
            self.at_record[event.branch] = self.alive

    def close(self) -> None:
        pass


@pytest.mark.parametrize("style", ["async with", "async for"])
async def test_first_1_stops_the_losing_branchs_stream_before_its_outcome(style: str) -> None:
    alive = _Alive()
    calls: list[str] = []

    def model(req: Any) -> str:
        calls.append(req.prompt)
        return "x"

    async def consumer() -> str:
        stream = parallel.stream(alive.item, n=3)
        if style == "async with":
            async with stream:
                async for _ in stream:
                    pass
        else:
            async for _ in stream:
                pass
        return "unreachable"

    async def winner() -> str:
        await alive.all_started.wait()
        return "won"

    async def body() -> object:
        return await parallel(consumer, winner, first=1)

    result = await run_one([Agent("w")], body, FunctionModel(model), sinks=[alive])
    outcomes = result.output
    assert isinstance(outcomes[0], Cancelled) and isinstance(outcomes[1], Ok)
    assert alive.at_record["parallel[0]"] == 0  # no stream task alive when it was recorded
    assert alive.alive == 0 and calls == []


@pytest.mark.parametrize("operator", ["stream", "pipeline"])
async def test_a_stream_left_open_by_a_branch_stops_when_the_branch_returns(operator: str) -> None:
    alive = _Alive()

    async def opener(i: int) -> str:
        if operator == "stream":
            stream: Any = parallel.stream(alive.item, n=3)
        else:
            stream = pipeline(range(3), alive.item, limit=3)
        await alive.all_started.wait()
        del stream  # abandoned: neither closed nor drained
        return "returned"

    result = await run_one([Agent("w")], lambda: parallel(opener, n=1), echo(), sinks=[alive])
    assert result.output[0].value == "returned"
    assert alive.at_record["parallel[0]"] == 0


async def test_leaving_async_with_early_closes_the_run_once_and_validly(tmp_path: Path) -> None:
    @flow(team=Team([Agent("w")]))
    async def first_only() -> object:
        async with parallel.stream(lambda i: agent("w", f"t{i}"), n=4) as stream:
            async for outcome in stream:
                return outcome.value.text
        return None

    result = await run(first_only, model=echo(), runs_root=tmp_path)
    assert result.status == "ok" and result.output.startswith("done t")
    lines = result.events_path.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["type"] for e in events].count("run_finished") == 1
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "ok"


async def test_a_stream_the_flow_abandons_ends_with_the_flow(tmp_path: Path) -> None:
    alive = _Alive()

    @flow(team=Team([Agent("w")]))
    async def abandons() -> str:
        stream = parallel.stream(alive.item, n=3)
        await alive.all_started.wait()
        del stream
        return "done"

    result = await run(abandons, model=echo(), runs_root=tmp_path, sinks=[alive])
    assert result.status == "ok" and alive.alive == 0
    assert result.events[-1].type == "run_finished"


async def test_compact_and_budget_inside_a_cancelled_scope_are_untouched() -> None:
    async def body() -> list[object]:
        with anyio.move_on_after(0):
            outcomes = await parallel(blocked_branch, n=2)
            return compact(outcomes)
        return compact([Ok("kept")])

    result = await run_one([], body, echo())
    assert result.output == ["kept"]


class _Channel:
    name = "test"

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    async def ask(
        self, question: str, payload: object, *, token: str, timeout: float | None
    ) -> tuple[str, str]:
        return await self.fn(question, payload), "tester"
