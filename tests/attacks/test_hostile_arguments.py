"""Hostile tool arguments in a real run: each comes back to the model as an observation, the run
goes on, nothing leaves the workspace, and every event (validated in tests) stays valid JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarmflow import Agent, RunResult, Team, agent, agent_session, flow, run
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.testing import FunctionModel, Step, tool_call

FILE_TOOLS = ["read_file", "write_file", "edit", "list_files", "search"]


def raw(name: str, arguments: str) -> ToolCall:
    return ToolCall(id=f"raw_{abs(hash(arguments))}", name=name, arguments=arguments)


ATTACKS: list[ToolCall] = [
    tool_call("read_file", path="a\x00b"),
    tool_call("write_file", path="nul\x00.txt", content="x"),
    tool_call("read_file", path="\udcff\udcfe"),
    tool_call("write_file", path="lone.txt", content="bad \ud800 half"),
    tool_call("edit", path="notes.txt", old="needle", new="\ud800"),
    tool_call("read_file", path=42),
    tool_call("read_file", path=None),
    tool_call("read_file", path=["notes.txt"]),
    tool_call("write_file", path="w.txt", content={"not": "text"}),
    tool_call("read_file", path="notes.txt", offset="many"),
    tool_call("read_file", path="notes.txt", offset=-5, limit=10**30),
    # Harmless however odd: these four run (and find nothing, or show the bytes they can).
    tool_call("list_files", pattern="\x00"),
    tool_call("search", pattern="needle\x00"),
    tool_call("search", pattern="x" * 100_000),
    tool_call("read_file", path="latin1.txt"),
    tool_call("read_file", path="../outside.txt"),
    tool_call("write_file", path="/tmp/escaped.txt", content="x"),
    tool_call("write_file", path="link/escaped.txt", content="x"),
    raw("read_file", '{"path": "notes.txt"'),
    raw("read_file", "[1, 2, 3]"),
    raw("read_file", '"notes.txt"'),
    raw("read_file", "\x00\xff"),
    raw("write_file", '{"path": "dup.txt", "path": "/etc/passwd", "content": "x"}'),
]


def hostile(request: ModelRequest) -> Any:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < len(ATTACKS):
        return Step(tool_calls=(ATTACKS[done],))
    return "survived"


TEAM = Team([Agent("hostile", tools=FILE_TOOLS, workspace="local", max_steps=len(ATTACKS) + 2)])


@flow(team=TEAM)
async def attacked() -> str:
    return (await agent("hostile", "attack")).text


async def test_every_hostile_argument_is_an_observation(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("needle\n")
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    result: RunResult = await run(attacked, model=FunctionModel(hostile), repo=root,
                                  runs_root=tmp_path / "runs", raise_on_failure=False)  # fmt: skip
    assert result.status == "ok", result.error
    assert result.output == "survived"
    executed = [e for e in result.events if e.type in ("tool_executed", "tool_refused")]
    assert len(executed) == len(ATTACKS)
    ran = [i for i, e in enumerate(executed) if getattr(e, "ok", False)]
    assert ran == [11, 12, 13, 14]  # the harmless four; every other one was refused
    assert "caf" in executed[14].result  # a non-UTF-8 file is shown, not a crash
    assert result.events_path is not None
    assert_contained(root, outside, result.events_path)


def assert_contained(root: Path, outside: Path, events: Path) -> None:
    assert not list(outside.iterdir()) and not Path("/tmp/escaped.txt").exists()
    assert (root / "notes.txt").read_text() == "needle\n"
    for line in events.read_bytes().splitlines():
        json.loads(line)  # every line whole and valid


SESSION_TEAM = Team([Agent("hostile", tools=["read_file"], workspace="local")])
broken = [True]


@flow(team=SESSION_TEAM)
async def one_turn() -> str:
    async with agent_session("hostile") as session:
        answer = await session.send("attack")
        if broken[0]:
            raise RuntimeError("the flow's own code failed after the turn")
        return str(answer.text)


def lone_surrogates(request: ModelRequest) -> Any:
    if not any(m.role == "tool" for m in request.messages):
        return tool_call("read_file", path="\udcff\ud800")
    return "answered \udcfe"


async def test_a_lone_surrogate_is_journaled_and_replayed(tmp_path: Path) -> None:
    broken[0] = True
    first = await run(one_turn, model=FunctionModel(lone_surrogates), repo=tmp_path,
                      runs_root=tmp_path / "runs", raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and "own code" in str(first.error)
    assert first.run_dir is not None
    broken[0] = False
    again_model = FunctionModel(lone_surrogates)
    again = await run(one_turn, model=again_model, resume=first.run_dir, raise_on_failure=False)
    assert again.status == "ok", again.error
    assert again.output == "answered \udcfe" and again_model.requests == []
