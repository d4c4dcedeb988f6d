"""The event stream: envelope, contiguous sequence, JSONL durability, no secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from swarmflow import Agent, agent, parallel
from swarmflow.core.events import parse_event
from swarmflow.sinks import JsonlSink, MemorySink, read_events
from swarmflow.testing import FunctionModel, ScriptedModel, tool_call
from tests.runtime.helpers import run_one

ROOT = Path(__file__).resolve().parents[2]


async def test_sequence_is_contiguous_and_envelope_complete() -> None:
    model = FunctionModel(lambda req: "ok")
    result = await run_one([Agent("w")], lambda: parallel(lambda i: agent("w", str(i)), n=5), model)
    events = result.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert {e.run_id for e in events} == {result.run_id}
    assert events[0].type == "run_started" and events[-1].type == "run_finished"
    calls = [e for e in events if e.type == "model_called"]
    assert sorted(e.branch for e in calls) == [f"parallel[{i}]" for i in range(5)]
    assert all(e.agent == "w" and e.session for e in calls)
    assert all(b.t >= a.t for a, b in zip(events, events[1:], strict=False))


async def test_jsonl_round_trips_the_memory_stream() -> None:
    result = await run_one([Agent("w")], lambda: agent("w", "x"), ScriptedModel(["ok"]))
    from_file = list(read_events(result.events_path))
    assert from_file == result.events


def test_jsonl_is_valid_after_sigkill(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("kill_target.py")), str(tmp_path)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    (log,) = tmp_path.glob("*/events.jsonl")
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""  # the file ends at a line boundary
    events = [parse_event(line) for line in lines[:-1]]
    assert len(events) > 20
    assert [e.seq for e in events] == list(range(len(events)))
    assert not any(e.type == "run_finished" for e in events)


async def test_api_keys_in_the_environment_never_reach_a_sink(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = "sk-test-4f9a8b7c6d5e4f3a2b1c"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    leaky = FunctionModel(
        lambda req: (
            "done"
            if req.messages[-1].role == "tool"
            else tool_call("run_shell", command=f"echo {secret}")
        )
    )
    memory = MemorySink()
    jsonl = JsonlSink(tmp_path / "events.jsonl")
    shell = Agent("s", tools=["run_shell"], workspace="local")
    result = await run_one(
        [shell],
        lambda: agent("s", f"the key is {secret}"),
        leaky,
        events=[memory, jsonl],
        repo=tmp_path,
    )
    assert result.status == "ok"
    text = (tmp_path / "events.jsonl").read_text()
    assert secret not in text and "[redacted]" in text
    for event in memory.events:
        assert secret not in event.model_dump_json()


def test_event_schema_is_json_serialisable() -> None:
    from swarmflow.core.events import ModelCalled

    e = ModelCalled(run_id="r", seq=0, ts=0.0, t=0.0, tokens_in=3)
    assert json.loads(e.model_dump_json())["type"] == "model_called"
    from pydantic import ValidationError

    with pytest.raises(ValidationError):  # frozen
        e.seq = 3  # type: ignore[misc]
