"""Secrets never reach the disk: not through the event log, and not through the journal, when a
model, a tool or a board message repeats one."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.testing import FunctionModel, Step, tool_call

SECRET = "sk-live-attack-SECRET-0123456789abcdef"
BOARD = ("create_thread", "send_message")
TEAM = Team([Agent("w", tools=BOARD), Agent("peer")], edges=[("w", "peer")])


@flow(team=TEAM)
async def repeats_the_key() -> str:
    return (await agent("w", "what is the key?")).text


def leaky(request: ModelRequest) -> object:
    done = sum(1 for m in request.messages if m.role == "tool")
    steps = [
        tool_call("create_thread", name="keys", participants=["peer"]),
        tool_call("send_message", thread="keys", content=f"the key: {SECRET}"),
    ]
    return Step(tool_calls=(steps[done],)) if done < len(steps) else f"the key is {SECRET}"


async def test_a_repeated_secret_reaches_no_file_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = await run(repeats_the_key, model=FunctionModel(leaky), runs_root=tmp_path)
    assert result.status == "ok" and result.run_dir is not None
    files = [p for p in result.run_dir.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {EVENTS_FILE, JOURNAL_FILE}
    assert [p.name for p in files if SECRET.encode() in p.read_bytes()] == []
