"""`pipeline`: no barrier between stages, failures per item, closing cancels."""

from __future__ import annotations

import anyio

from swarmflow import Agent, Failed, Ok, agent, compact, parallel, pipeline
from swarmflow.core.errors import ToolError
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import run_one


async def test_first_review_arrives_before_the_slowest_coder_finishes() -> None:
    slow_may_finish = anyio.Event()
    log: list[str] = []

    async def policy(req: ModelRequest) -> str:
        if req.agent == "coder" and req.prompt == "slow":
            await slow_may_finish.wait()
        log.append(f"{req.agent}:{req.prompt[-4:]}")
        return f"patch for {req.prompt}" if req.agent == "coder" else "LGTM"

    async def body() -> list[str]:
        coders = parallel.stream(agent("coder", "fast"), agent("coder", "slow"))
        seen = []
        async for review in pipeline(coders, lambda c: agent("reviewer", c)):
            seen.append(review.value.text)
            slow_may_finish.set()  # only now may the slow coder answer
        return seen

    model = FunctionModel(policy)
    result = await run_one(
        [Agent("coder"), Agent("reviewer")], body, model, edges=[("coder", "reviewer")]
    )
    assert result.output == ["LGTM", "LGTM"]
    assert log.index("reviewer:fast") < log.index("coder:slow")


async def test_items_flow_through_stages_without_a_barrier() -> None:
    first_done = anyio.Event()
    order: list[str] = []

    async def stage_one(x: int) -> int:
        if x == 1:
            await first_done.wait()  # item 1 is held in stage one until item 0 is out
        order.append(f"s1:{x}")
        return x * 10

    async def stage_two(x: int) -> int:
        order.append(f"s2:{x}")
        return x + 1

    async def body() -> list[int]:
        out = []
        async for outcome in pipeline([0, 1], stage_one, stage_two, limit=2):
            out.append(outcome.value)
            first_done.set()
        return out

    result = await run_one([], body, FunctionModel(lambda r: ""))
    assert result.output == [1, 11]
    assert order.index("s2:0") < order.index("s1:1")


async def test_failing_item_becomes_failed_and_others_flow() -> None:
    async def stage(x: int) -> int:
        if x == 2:
            raise ToolError("bad item")
        return x

    async def body() -> list[object]:
        return await pipeline(range(4), stage).collect()

    result = await run_one([], body, FunctionModel(lambda r: ""))
    by_index = {o.index: o for o in result.output}
    assert isinstance(by_index[2], Failed) and "bad item" in str(by_index[2].error)
    assert sorted(o.value for o in result.output if isinstance(o, Ok)) == [0, 1, 3]


async def test_closing_the_iterator_cancels_in_flight_work() -> None:
    started = anyio.Event()
    never = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        if req.prompt == "hang":
            started.set()
            await never.wait()
        return "quick"

    async def body() -> str:
        stream = pipeline(["go", "hang"], lambda p: agent("w", p), limit=2)
        async with stream:
            first = await stream.__anext__()
            await started.wait()
        return first.value.text

    result = await run_one([Agent("w")], body, FunctionModel(policy))
    assert result.output == "quick"
    ended = [e for e in result.events if e.type == "session_ended"]
    assert sorted(e.reason for e in ended) == ["cancelled", "completed"]
    cancelled = [
        e for e in result.events if e.type == "branch_finished" and e.outcome == "cancelled"
    ]
    assert len(cancelled) == 1


async def test_pipeline_over_compacted_parallel() -> None:
    async def body() -> list[str]:
        outs = compact(await parallel(lambda i: agent("coder", f"c{i}"), n=3))
        return sorted([o.value.text async for o in pipeline(outs, lambda c: agent("reviewer", c))])

    model = FunctionModel(lambda r: "ok" if r.agent == "reviewer" else f"code {r.prompt}")
    result = await run_one(
        [Agent("coder"), Agent("reviewer")], body, model, edges=[("coder", "reviewer")]
    )
    assert result.output == ["ok", "ok", "ok"]


async def test_pipeline_misuse_is_a_clear_error() -> None:
    async def body() -> object:
        return pipeline(42, lambda x: x)  # type: ignore[arg-type]

    result = await run_one([], body, FunctionModel(lambda r: ""))
    assert result.status == "failed" and "iterable" in str(result.error)
