"""`swarmflow.stream`: typed events as they happen, model text deltas when the model streams."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

import swarmflow
from swarmflow import Agent, ConfigError, Team, agent, flow, parallel
from swarmflow.models import OpenAIModel
from swarmflow.record.events import EventBase, ModelCalled, RunFinished, RunStarted, SessionEnded
from swarmflow.report import read_log
from swarmflow.stream import TextDelta
from swarmflow.testing import FunctionModel
from tests.support.chat_server import ChatServer, stream_text

TEAM = Team([Agent("a"), Agent("b")], edges=[("a", "b")])


@flow(team=TEAM)
async def two(task: str) -> str:
    outs = await parallel(lambda i: agent("a", f"{task} {i}"), n=2)
    return (await agent("b", "merge: " + " ".join(o.value.text for o in outs))).text


async def test_every_event_arrives_in_order_ending_with_run_finished() -> None:
    seen: list[Any] = []
    async with swarmflow.stream(two, task="t", model=FunctionModel(lambda r: "x")) as events:
        async for item in events:
            seen.append(item)
    assert all(isinstance(e, EventBase) for e in seen)
    assert isinstance(seen[0], RunStarted) and isinstance(seen[-1], RunFinished)
    assert [e.seq for e in seen] == list(range(len(seen)))
    assert events.result is not None and events.result.status == "ok"
    assert [e.seq for e in events.result.events] == [e.seq for e in seen]


async def test_a_plain_async_for_reads_the_whole_run() -> None:
    kinds = [
        e.type async for e in swarmflow.stream(two, task="t", model=FunctionModel(lambda r: "y"))
    ]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("model_called") == 3


async def test_events_arrive_while_the_run_is_still_going() -> None:
    release = anyio.Event()

    async def slow(request: Any) -> str:
        if request.agent == "b":
            await release.wait()  # b waits until the reader has seen a's work
        return "z"

    async with swarmflow.stream(two, task="t", model=FunctionModel(slow)) as events:
        async for item in events:
            if isinstance(item, SessionEnded) and item.agent == "a" and not release.is_set():
                assert events.result is None  # the run has not finished yet
                release.set()
    assert events.result is not None and events.result.status == "ok"


async def test_leaving_early_cancels_the_run() -> None:
    never = anyio.Event()

    async def stuck(request: Any) -> str:
        await never.wait()
        return "never"

    with anyio.fail_after(30):
        async with swarmflow.stream(two, task="t", model=FunctionModel(stuck)) as events:
            async for item in events:
                if isinstance(item, RunStarted):
                    run_id = item.run_id
                    break
    log = read_log(Path(os.environ["SWARMFLOW_RUNS"]) / run_id)
    last = log.events[-1]
    assert isinstance(last, RunFinished) and last.status == "cancelled"


async def test_a_bad_argument_is_raised_to_the_reader() -> None:
    with pytest.raises(ConfigError, match="has no input .nope."):
        async for _ in swarmflow.stream(two, nope=1, model=FunctionModel(lambda r: "x")):
            raise AssertionError("the stream yielded an item before refusing its input")
    with pytest.raises(ConfigError, match="needs a @flow"):
        swarmflow.stream(lambda: None)  # type: ignore[arg-type]


@pytest.mark.allow_model_calls
async def test_text_deltas_arrive_when_the_model_streams() -> None:
    @flow(team=Team([Agent("a")]))
    async def one() -> str:
        return (await agent("a", "say it")).text

    with ChatServer() as server:
        server.script(
            stream_text(["Hel", "lo, ", "world"], with_usage={"prompt": 9, "completion": 3})
        )
        async with OpenAIModel(
            "test-model", base_url=server.url, api_key="none", stream=True
        ) as model:
            items = [item async for item in swarmflow.stream(one, model=model)]
    deltas = [i for i in items if isinstance(i, TextDelta)]
    assert [d.text for d in deltas] == ["Hel", "lo, ", "world"]
    assert {(d.agent, d.type) for d in deltas} == {("a", "text_delta")}
    called = next(i for i in items if isinstance(i, ModelCalled))
    assert deltas[0].session == called.session
    assert items.index(deltas[-1]) < items.index(called)  # the text streamed before the call ended
    final = items[-1]
    assert isinstance(final, RunFinished) and final.output == "Hello, world"


async def test_a_failed_flow_streams_its_events_then_raises_flow_failed() -> None:
    @flow(team=Team([Agent("a")]))
    async def broken() -> None:
        await agent("a", "go")
        raise RuntimeError("the flow's own bug")

    seen: list[str] = []
    with pytest.raises(swarmflow.FlowFailed, match="the flow's own bug") as caught:
        async with swarmflow.stream(broken, model=FunctionModel(lambda r: "x")) as events:
            async for item in events:
                seen.append(item.type)
    assert seen[0] == "run_started" and seen[-1] == "run_finished"
    assert events.result is caught.value.result and events.result.status == "failed"
