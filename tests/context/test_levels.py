"""Each level in a session: offloaded content read back with the agent's own tools, loops
folded, processors registered and ordered as rails are, policies refused when they are wrong."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, ConfigError
from swarmflow.context import ContextPolicy, Pressure, Reduction, context_processor
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall
from swarmflow.record.events import ContextCompacted, ToolExecuted
from swarmflow.testing import FunctionModel, Step
from tests.context.content import pytest_log
from tests.runtime.helpers import of_type, run_one

BUDGET = 6_000


def _reader(paths: list[str], then: Any = None) -> FunctionModel:
    """Reads `paths` one call at a time, then does what `then(request)` says (or answers)."""
    calls = iter(range(len(paths)))

    def policy(request: ModelRequest) -> Any:
        n = next(calls, None)
        if n is not None:
            return Step(f"reading {paths[n]}", (ToolCall(f"c{n}", "read_file",
                                                         json.dumps({"path": paths[n]})),))  # fmt: skip
        return then(request) if then is not None else "done"

    return FunctionModel(policy)


def _offloaded_name(request: ModelRequest) -> str | None:
    for m in request.messages:
        content = m.content or ""
        if m.role == "tool" and content.startswith("[offloaded:"):
            return content.split(" saved to ", 1)[1].split(";", 1)[0]
    return None


async def test_an_offloaded_log_is_read_back_whole_with_read_file(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "test.log").write_text(pytest_log(200))
    for n in range(6):
        (tmp_path / f"f{n}.txt").write_text(f"line {n}\n" * 300)
    asked: list[str] = []

    def read_back(request: ModelRequest) -> Any:
        if asked:
            return "done"
        name = _offloaded_name(request)
        assert name is not None, "nothing was offloaded"
        asked.append(name)
        return ToolCall("back", "read_file", json.dumps({"path": name, "limit": 2000}))

    model = _reader(["test.log", *(f"f{n}.txt" for n in range(6))], read_back)
    policy = ContextPolicy(processors=["offload"], offload_chars=2_000, keep_recent=2)
    reader = Agent("a", tools=["read_file"], workspace="local", context=policy, max_steps=20)
    result = await run_one([reader], _ask, model, repo=tmp_path, context_tokens=BUDGET)
    assert result.output == "done"
    assert asked and asked[0].startswith(".swarmflow-context/")
    offloads = [e for e in of_type(result, "context_compacted") if e.level == "offload"]
    assert offloads and ".swarmflow-context/" in offloads[0].removed
    back = [e for e in result.events if isinstance(e, ToolExecuted) and e.call_id == "back"]
    assert back and back[0].ok
    saved = (tmp_path / asked[0]).read_text()
    assert saved.startswith(f"{'1':>6}\t") and "short test summary info" in saved
    # The offloaded files never reach a commit: their folder ignores itself.
    assert ".swarmflow-context" not in _git(tmp_path, "status", "--porcelain", "--ignored=no")


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True)
    return done.stdout.decode()


async def _ask() -> str:
    from swarmflow import agent

    return (await agent("a", "read everything")).text


async def test_an_offload_note_keeps_a_structured_preview_and_masking_keeps_its_handle(
    tmp_path: Path,
) -> None:
    (tmp_path / "test.log").write_text(pytest_log(150))
    for n in range(8):
        (tmp_path / f"f{n}.txt").write_text(f"line {n}\n" * 300)
    for levels in (["offload"], ["offload", "elide_observations"]):
        model = _reader(["test.log", *(f"f{n}.txt" for n in range(8))])
        policy = ContextPolicy(processors=levels, offload_chars=2_000)
        reader = Agent("a", tools=["read_file"], workspace="local", context=policy, max_steps=20)
        result = await run_one([reader], _ask, model, repo=tmp_path, context_tokens=BUDGET)
        assert result.output == "done"
        if levels == ["offload"]:
            notes = [m.content or "" for r in model.requests for m in r.messages
                     if (m.content or "").startswith("[offloaded:")]  # fmt: skip
            assert any("FAILED tests/test_mod0.py::test_case_0" in n for n in notes)
            assert any("8 failed, 2892 passed" in n for n in notes)  # the preview's end
    last = model.requests[-1].messages
    handles = [m.content for m in last if (m.content or "").startswith("[offloaded:")]
    assert handles and all("\n" not in (h or "") for h in handles)  # masked to its handle


async def test_a_dead_loop_folds_into_one_turn_with_a_count(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 3_000)
    (tmp_path / "loop.txt").write_text("waiting\n")
    script = ["loop.txt", "loop.txt", "big.txt", "loop.txt", "loop.txt", "big.txt"] * 3
    model = _reader(script)
    policy = ContextPolicy(processors=["collapse_loops"])
    reader = Agent("a", tools=["read_file"], workspace="local", context=policy, max_steps=30)
    result = await run_one([reader], _ask, model, repo=tmp_path, context_tokens=4_000)
    assert result.output == "done"
    folded = [e for e in of_type(result, "context_compacted") if e.level == "collapse_loops"]
    assert folded and "repeated turns" in folded[0].removed
    texts = [m.content or "" for m in model.requests[-1].messages]
    assert any("returned this same result 2 times in a row" in t for t in texts)


def test_processors_fire_in_priority_order_as_rails_do() -> None:
    from swarmflow.context.registry import ProcessorRegistry

    async def level(history: list[Message], pressure: Pressure) -> Reduction | None:
        return None

    registry = ProcessorRegistry()
    for name, priority in [("late", 1), ("first", 9), ("second", 9), ("middle", 5)]:
        registry.register(name, level, priority=priority)
    names = [r.name for r in registry.ordered(["late", "middle", "second", "first"])]
    assert names == ["first", "second", "middle", "late"]
    with pytest.raises(ConfigError, match="unknown context processor 'midle'.*'middle'"):
        registry.ordered(["midle"], agent="coder")


async def test_a_registered_processor_fires_as_a_level_and_is_recorded(tmp_path: Path) -> None:
    @context_processor("forget_reasoning", priority=950)
    async def forget_reasoning(history: list[Message], pressure: Pressure) -> Reduction | None:
        out = [Message(m.role, None, m.tool_calls, m.tool_call_id, m.name)
               if m.role == "assistant" and m.tool_calls and m.content else m
               for m in history[:-2]]  # fmt: skip
        return Reduction([*out, *history[-2:]], "assistant reasoning dropped")

    for n in range(6):
        (tmp_path / f"f{n}.txt").write_text(f"line {n}\n" * 200)
    model = _reader([f"f{n}.txt" for n in range(6)])
    policy = ContextPolicy(processors=["forget_reasoning", "elide_observations"])
    reader = Agent("a", tools=["read_file"], workspace="local", context=policy, max_steps=20)
    result = await run_one([reader], _ask, model, repo=tmp_path, context_tokens=3_000)
    levels = [e.level for e in result.events if isinstance(e, ContextCompacted)]
    assert levels and levels[0] == "forget_reasoning"
    first = next(e for e in result.events if isinstance(e, ContextCompacted))
    assert (
        first.removed == "assistant reasoning dropped" and first.tokens_after < first.tokens_before
    )


async def test_an_unknown_level_in_a_policy_is_one_clear_error(tmp_path: Path) -> None:
    reader = Agent("a", context=["ofload"])
    result = await run_one([reader], _ask, FunctionModel(lambda r: "done"))
    assert result.status == "failed"
    assert "unknown context processor 'ofload' (did you mean 'offload'?)" in str(result.error)


def test_a_policy_whose_watermarks_leave_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match="low .* must be below high"):
        ContextPolicy(high=0.5, low=0.8)
    assert ContextPolicy.model_validate("none").processors == ()
    assert Agent("a", context=["offload"]).context == ContextPolicy(processors=("offload",))
    assert ModelResponse is not None


async def test_the_adherence_axis_compares_the_levels_that_fired_with_the_assigned(
    tmp_path: Path,
) -> None:
    from swarmflow.record.events import RunStarted
    from swarmflow.report.adherence import adherence

    for n in range(6):
        (tmp_path / f"f{n}.txt").write_text(f"line {n}\n" * 200)
    policy = ContextPolicy(processors=["elide_observations"])
    reader = Agent("a", tools=["read_file"], workspace="local", context=policy, max_steps=20)
    model = _reader([f"f{n}.txt" for n in range(6)])
    result = await run_one([reader], _ask, model, repo=tmp_path, context_tokens=3_000)
    start = next(e for e in result.events if isinstance(e, RunStarted))
    assert start.roles["a"]["context"] == ["elide_observations", "cut_observations"]
    axis = adherence(result.events).axis("context policy")
    assert axis.ok and "elide_observations" in axis.realized
    narrower = start.model_copy(update={"roles": {"a": {**start.roles["a"], "context": []}}})
    events = [narrower if e is start else e for e in result.events]
    deviations = adherence(events).axis("context policy").deviations
    assert any("agent 'a' fired context level 'elide_observations'" in d for d in deviations)


async def test_offloading_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    """A `.swarmflow-context` that is a link to a folder outside the workspace (committed,
    or made by a command): nothing is written there, no `.gitignore` either, and the run
    goes on with the observations kept in the context."""
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".swarmflow-context").symlink_to(outside, target_is_directory=True)
    for n in range(6):
        (workspace / f"f{n}.txt").write_text(f"line {n}\n" * 300)
    model = _reader([f"f{n}.txt" for n in range(6)])
    policy = ContextPolicy(processors=["offload"], offload_chars=2_000, keep_recent=2)
    reader = Agent("a", tools=["read_file"], workspace="local", context=policy, max_steps=20)
    result = await run_one([reader], _ask, model, repo=workspace, context_tokens=BUDGET)
    assert result.status == "ok" and result.output == "done"
    assert list(outside.iterdir()) == []
