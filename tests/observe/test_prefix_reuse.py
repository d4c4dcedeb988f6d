"""Prompt-prefix reuse: each request repeats the previous one of its session as its prefix
(tools and card first, history appended), measured from what was sent; only a compaction may
break it, and it is recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.cli import main
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from swarmflow.core.tokens import spec_units
from swarmflow.flows import TEAM
from swarmflow.models import OpenAIModel
from swarmflow.record.events import ContextCompacted, ModelCalled
from swarmflow.report import digest
from swarmflow.sessions.prefix import PrefixMeter
from swarmflow.testing import FunctionModel
from tests.support.chat_server import ChatServer, completion, usage, wire_call

STEPS = 20


def _looping(steps: int, size: int = 40) -> Any:
    """A policy that calls `list_files` `steps - 1` times, then answers."""

    def policy(request: Any) -> Any:
        done = sum(1 for m in request.messages if m.role == "assistant")
        if done < steps - 1:
            arguments = json.dumps({"path": ".", "note": "x" * size + str(done)})
            return ModelResponse(tool_calls=(ToolCall(f"c{done}", "list_files", arguments),))
        return "finished"

    return policy


CODER_TOOLS = next(a for a in TEAM.agents if a.name == "coder").tools
"""The flagship coder's tool set: what a real coding loop sends with every request."""


def _team() -> Team:
    return Team([Agent("looper", tools=list(CODER_TOOLS), workspace="local", max_steps=50)])


async def test_a_20_step_tool_loop_keeps_its_prefix_and_reuses_over_95_percent() -> None:
    @flow(team=_team())
    async def loop() -> str:
        return (await agent("looper", "walk the tree")).text

    result = await run(loop, model=FunctionModel(_looping(STEPS)))
    calls = [e for e in result.events if isinstance(e, ModelCalled)]
    assert len(calls) == STEPS
    assert calls[0].prefix_tokens == 0 and calls[0].prompt_tokens > 0
    for before, after in zip(calls, calls[1:], strict=False):
        assert after.prefix_tokens == before.prompt_tokens  # the whole previous prompt, kept
        assert after.prompt_tokens > before.prompt_tokens
    spend = digest(result.events).by_agent()["looper"]
    assert spend.prefix_share is not None and spend.prefix_share >= 0.95
    assert digest(result.events).prefix_breaks == []


async def test_a_compaction_breaks_the_prefix_and_is_recorded_not_flagged() -> None:
    @flow(team=_team())
    async def loop() -> str:
        return (await agent("looper", "walk the tree")).text

    result = await run(loop, model=FunctionModel(_looping(12, size=1200)), context_tokens=3000)
    events = result.events
    assert any(isinstance(e, ContextCompacted) for e in events)
    calls = [e for e in events if isinstance(e, ModelCalled)]
    assert any(
        after.prefix_tokens < before.prompt_tokens
        for before, after in zip(calls, calls[1:], strict=False)
    )
    d = digest(events)
    assert d.compactions and d.prefix_breaks == []


async def test_a_rail_that_rewrites_the_history_is_flagged_as_a_broken_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dataclasses import replace

    from swarmflow.rails import Amend, Hook, rail

    def stamp(ctx: Any) -> Amend:  # a per-call stamp in front: what a session must not do
        request = ctx.payload
        head = request.messages[0]
        first = replace(head, content=f"call {ctx.step}: {head.content}")
        return Amend(replace(request, messages=[first, *request.messages[1:]]))

    @flow(team=_team())
    async def loop() -> str:
        return (await agent("looper", "walk the tree")).text

    result = await run(
        loop,
        model=FunctionModel(_looping(4)),
        rails=[rail("stamp", [Hook.BEFORE_MODEL_CALL], stamp)],
    )
    d = digest(result.events)
    assert len(d.prefix_breaks) == 3 and "with no compaction" in d.prefix_breaks[0]
    assert main(["report", str(result.run_dir)]) == 0
    assert "BROKEN   looper" in capsys.readouterr().out


@pytest.mark.allow_model_calls
async def test_on_the_wire_each_request_starts_with_the_previous_one() -> None:
    steps = 5
    with ChatServer() as server:
        for i in range(steps - 1):
            args = json.dumps({"path": ".", "note": str(i)})
            server.script(completion(None, tool_calls=[wire_call("list_files", args, f"c{i}")],
                                     usage=usage(100 + i, 5, cached=90)))  # fmt: skip
        server.script(completion("done", usage=usage(200, 5, cached=150)))
        model = OpenAIModel("test-model", base_url=server.url, api_key="sk-local-test-key-xyz")

        @flow(team=_team())
        async def loop() -> str:
            return (await agent("looper", "walk the tree")).text

        async with model:
            result = await run(loop, model=model)
    bodies = server.bodies
    assert len(bodies) == steps
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert after["tools"] == before["tools"]  # tools first, unchanged
        assert after["messages"][: len(before["messages"])] == before["messages"]
    spend = digest(result.events).by_agent()["looper"]
    assert spend.tokens_cached == 4 * 90 + 150  # the provider's own count, where it reports one


def test_tool_sizes_known_in_advance_measure_as_the_schemas_do() -> None:
    specs = [ToolSpec("list_files", "List files.", {"type": "object", "properties": {}})]
    known = PrefixMeter(specs, sum(spec_units(s) for s in specs))
    other = [ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}})]
    for tools in (specs, other):  # a request with other tools is measured afresh
        request = ModelRequest(messages=[Message("user", "walk the tree")], tools=tools)
        assert known.measure(request) == PrefixMeter().measure(request)
