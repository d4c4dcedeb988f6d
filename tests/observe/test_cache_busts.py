"""Cache busts announce themselves: a request that does not repeat its session's previous
request as its prefix, with no compaction between them, is a `cache_bust` naming the first
part that differs, and a warning once per cause in the run's live output and its report."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import pytest

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.cli import main
from swarmflow.core.messages import Message, ModelResponse, ToolCall, ToolSpec
from swarmflow.flows.progress import ProgressSink
from swarmflow.rails import Amend, Hook, rail
from swarmflow.record.events import CacheBust, ContextCompacted, ModelCalled
from swarmflow.report import digest
from swarmflow.sessions.prefix import first_difference
from swarmflow.testing import FunctionModel

CARD = "You walk the tree and say what is in it."


def _looping(steps: int, size: int = 40) -> Any:
    """A policy that calls `list_files` `steps - 1` times, then answers (counting its calls,
    since a compaction leaves fewer of them in the request)."""
    calls = iter(range(steps))

    def policy(request: Any) -> Any:
        done = next(calls)
        if done < steps - 1:
            arguments = json.dumps({"path": ".", "note": "x" * size + str(done)})
            return ModelResponse(tool_calls=(ToolCall(f"c{done}", "list_files", arguments),))
        return "finished"

    return policy


def _team() -> Team:
    looper = Agent("looper", card=CARD, tools=["list_files", "read_file"], workspace="local",
                   max_steps=40)  # fmt: skip
    return Team([looper])


@flow(team=_team())
async def walk() -> str:
    return (await agent("looper", "walk the tree")).text


def _from_third_call(change: Any) -> Any:
    """A rail that changes every request from the third call on (it stays changed)."""

    def amend(ctx: Any) -> Amend | None:
        return Amend(change(ctx.payload)) if ctx.step >= 2 else None

    return rail("edit", [Hook.BEFORE_MODEL_CALL], amend)


def _edited_card(request: Any) -> Any:
    card = request.messages[0]
    assert card.role == "system"
    edited = replace(card, content=card.content + "\nToday is Monday.")
    return replace(request, messages=[edited, *request.messages[1:]])


def _reordered_tools(request: Any) -> Any:
    return replace(request, tools=tuple(reversed(request.tools)))


async def test_a_card_edited_between_calls_is_one_cache_bust_naming_the_card() -> None:
    sink = ProgressSink(io.StringIO(), tty=False)
    result = await run(walk, model=FunctionModel(_looping(6)),
                       rails=[_from_third_call(_edited_card)], sinks=[sink])  # fmt: skip
    busts = [e for e in result.events if isinstance(e, CacheBust)]
    assert len(busts) == 1
    assert busts[0].part == "card" and busts[0].where == "the role card"
    assert busts[0].step == 3 and busts[0].kept_tokens < busts[0].previous_tokens
    shown = sink.stream.getvalue()  # type: ignore[attr-defined]
    assert shown.count("cache bust") == 1 and "the role card" in shown


async def test_tools_reordered_are_one_cache_bust_naming_the_tools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = await run(walk, model=FunctionModel(_looping(6)),
                       rails=[_from_third_call(_reordered_tools)])  # fmt: skip
    busts = [e for e in result.events if isinstance(e, CacheBust)]
    assert [(e.part, e.where, e.step) for e in busts] == [("tools", "the tool schemas", 3)]
    assert list(digest(result.events).cache_busts) == ["tools"]
    assert main(["report", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count("WARNING  cache bust") == 1 and "the tool schemas differs" in out


async def test_a_stamp_on_every_call_warns_once_per_cause() -> None:
    def stamp(ctx: Any) -> Amend:
        request = ctx.payload
        task = request.messages[1]
        stamped = replace(task, content=f"call {ctx.step}: {task.content}")
        return Amend(replace(request, messages=[request.messages[0], stamped,
                                                *request.messages[2:]]))  # fmt: skip

    sink = ProgressSink(io.StringIO(), tty=False)
    result = await run(walk, model=FunctionModel(_looping(5)),
                       rails=[rail("stamp", [Hook.BEFORE_MODEL_CALL], stamp)], sinks=[sink])  # fmt: skip
    busts = [e for e in result.events if isinstance(e, CacheBust)]
    assert len(busts) == 4 and {e.where for e in busts} == {"message 1 (user)"}
    assert sink.stream.getvalue().count("cache bust") == 1  # type: ignore[attr-defined]
    assert len(digest(result.events).cache_busts["message"]) == 4


async def test_a_compaction_is_no_cache_bust() -> None:
    result = await run(walk, model=FunctionModel(_looping(14, size=1200)), context_tokens=3000)
    events = result.events
    assert any(isinstance(e, ContextCompacted) for e in events)
    calls = [e for e in events if isinstance(e, ModelCalled)]
    assert any(b.prefix_tokens < a.prompt_tokens for a, b in zip(calls, calls[1:], strict=False))
    assert not [e for e in events if isinstance(e, CacheBust)]


def test_first_difference_names_tools_then_card_then_the_first_message() -> None:
    tools = (ToolSpec("a", "A.", {}), ToolSpec("b", "B.", {}))
    card, task = Message("system", "card"), Message("user", "task")
    said = Message("assistant", "ok")
    before = (tools, [card, task, said])
    assert first_difference(before, (tools, [card, task, said, Message("user", "more")])) is None
    assert first_difference(before, (tools[::-1], [card, task]))[0] == "tools"  # type: ignore[index]
    assert first_difference(before, (tools, [Message("system", "card!"), task, said])) == (
        "card",
        "the role card",
    )
    assert first_difference(before, (tools, [card, task, Message("assistant", "no")])) == (
        "message",
        "message 2 (assistant)",
    )
    assert first_difference(before, (tools, [card, task])) == (
        "message",
        "message 2 (none: the request is shorter)",
    )
