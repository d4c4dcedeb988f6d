"""Dataflow scheduling, cancellation, nesting and the run graph."""

from __future__ import annotations

import anyio

from swarmflow import Agent, Team, agent, flow, parallel, pipeline, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, Step
from tests.runtime.helpers import of_type, run_one


async def test_skew_probe_branches_do_not_wait_for_each_other() -> None:
    """A: 100 ms then 10 ms; B: 10 ms then 100 ms; then a join.

    Dataflow order: A1 starts, B1 ends, B2 starts, A1 ends, A2 starts, A2 ends, B2 ends.
    Lock-step would need B2 to wait for A1 (0.20 s instead of 0.11 s)."""
    latency = {"A1": 0.10, "A2": 0.01, "B1": 0.01, "B2": 0.10}
    model = FunctionModel(lambda req: Step(text=req.prompt, latency=latency[req.prompt]))

    async def chain(name: str) -> str:
        await agent("w", f"{name}1")
        return (await agent("w", f"{name}2")).text

    result = await run_one([Agent("w")], lambda: parallel(chain("A"), chain("B")), model)
    events = result.events
    finished = {e.preview: e.seq for e in events if e.type == "agent_finished"}
    b_starts = [e.seq for e in events if e.type == "session_started" and e.branch == "parallel[1]"]
    assert finished["B1"] < b_starts[1] < finished["A1"]  # B2 began while A1 still ran
    assert finished["A1"] < finished["A2"] and finished["B1"] < finished["B2"]
    assert max(finished.values()) < of_type(result, "operator_finished")[0].seq  # the join


async def test_cancelling_a_run_ends_every_session_and_leaves_no_task() -> None:
    started = 0
    all_started = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        nonlocal started
        started += 1
        if started == 4:
            all_started.set()
        await anyio.Event().wait()  # never answers
        return ""

    @flow(team=Team([Agent("w")]))
    async def stuck() -> object:
        coders = parallel.stream(lambda i: agent("w", f"c{i}"), n=2)
        return await parallel(lambda i: agent("w", f"p{i}"), n=2), [
            o async for o in pipeline(coders, lambda c: c)
        ]

    from swarmflow.record.sinks import MemorySink

    memory = MemorySink()
    before = len(anyio.get_running_tasks()) if hasattr(anyio, "get_running_tasks") else None
    from anyio import get_running_tasks

    before = len(get_running_tasks())
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(stuck, model=FunctionModel(policy), events=[memory]))
        await all_started.wait()
        tg.cancel_scope.cancel()
    assert len(get_running_tasks()) == before
    ended = [e for e in memory.events if e.type == "session_ended"]
    assert len(ended) == 4
    assert {(e.state, e.reason) for e in ended} == {("stopped", "cancelled")}
    assert memory.events[-1].type == "run_finished" and memory.events[-1].status == "cancelled"


async def test_subflow_nests_branch_and_budget() -> None:
    @flow(team=Team([Agent("w")]), budget={"tokens": 50_000})
    async def inner(x: str) -> str:
        return (await agent("w", x)).text

    @flow(team=Team([Agent("w")]))
    async def outer() -> list[object]:
        return await parallel(inner("a"), inner("b"))

    result = await run(outer, model=FunctionModel(lambda r: r.prompt * 2))
    assert [o.value for o in result.output] == ["aa", "bb"]
    branches = sorted(e.branch for e in of_type(result, "model_called"))
    assert branches[0].startswith("parallel[0]/flow:inner")
    assert branches[1].startswith("parallel[1]/flow:inner")


async def test_run_graph_records_every_operator_and_exports_mermaid() -> None:
    model = FunctionModel(lambda r: "x")
    result = await run_one(
        [Agent("a"), Agent("b")],
        lambda: parallel(lambda i: agent("a", str(i)), n=2),
        model,
        edges=[("a", "b")],
    )
    g = result.graph.executed.to_networkx()
    operators = sorted(d["operator"] for _, d in g.nodes(data=True))
    assert operators == ["agent", "agent", "branch", "branch", "parallel"]
    text = result.graph.mermaid()
    assert "flowchart LR" in text and "a --> b" in text and "parallel[1]" in text


def test_calling_a_flow_outside_a_run_is_a_clear_error() -> None:
    @flow
    async def f() -> int:
        return 1

    try:
        f()
    except Exception as exc:
        assert "swarmflow.run" in str(exc)
    else:
        raise AssertionError("expected an error")


def test_run_sync_and_input_checking() -> None:
    from swarmflow import run_sync

    @flow(team=Team([Agent("w")]))
    async def echo(text: str) -> str:
        return (await agent("w", text)).text

    assert run_sync(echo, model=FunctionModel(lambda r: r.prompt), text="hi").output == "hi"
    try:
        run_sync(echo, model=FunctionModel(lambda r: ""), txt="typo")
    except Exception as exc:
        assert "txt" in str(exc)
    else:
        raise AssertionError("expected an error")


async def test_a_subflow_agent_reusing_a_name_keeps_its_own_tools() -> None:
    """Per-run caches are keyed by declaration: the inner "w" may call tools, the outer may not."""
    seen: list[tuple[str, ...]] = []

    def policy(request: ModelRequest) -> str:
        seen.append(tuple(spec.name for spec in request.tools))
        return "done"

    @flow(team=Team([Agent("w", tools=("read_file",))]))
    async def inner() -> str:
        return (await agent("w", "inner")).text

    @flow(team=Team([Agent("w")]))
    async def outer() -> str:
        await agent("w", "outer")
        return await inner()

    result = await run(outer, model=FunctionModel(policy))
    result.raise_for_status()
    assert seen == [(), ("read_file",)]
    started = [e.tools for e in of_type(result, "session_started")]
    assert started == [[], ["read_file"]]
