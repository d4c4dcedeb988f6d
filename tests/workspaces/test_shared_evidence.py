"""STORM's pushed evidence, through runs: invalidations, the command log, intent notes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, agent, parallel
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

TOOLS = ["read_file", "write_file", "edit", "run_shell", "list_files", "reserve", "release"]


def _agents(*names: str) -> list[Agent]:
    return [Agent(n, tools=TOOLS, workspace="shared", sandbox="none") for n in names]


def _told(request: ModelRequest) -> str:
    """The evidence given at this request's step boundary (after the last answer), or ""."""
    messages = list(request.messages)
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return "\n".join(m.content or "" for m in messages[last + 1 :] if m.role == "user")


def _calls(model: FunctionModel, name: str) -> list[ModelRequest]:
    return [r for r in model.requests if r.agent == name]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    return tmp_path


async def test_a_reader_is_told_of_a_write_before_it_writes_and_writes_after_a_reread(
    repo: Path,
) -> None:
    b_read, a_wrote = anyio.Event(), anyio.Event()
    new = "def f():\n    return 2\n"

    async def policy(request: ModelRequest) -> Any:
        step = len(_calls(model, request.agent))
        if request.agent == "A":
            if step == 1:
                return tool_call("read_file", path="a.py")
            if step == 2:
                await b_read.wait()
                return tool_call("write_file", path="a.py", content=new, intent="f returns 2 now")
            a_wrote.set()
            return "A done"
        if step == 1:
            return tool_call("read_file", path="a.py")
        if step == 2:
            b_read.set()
            await a_wrote.wait()  # A writes while this call is in flight
            return tool_call("list_files")
        if step == 3:
            return tool_call("read_file", path="a.py")
        if step == 4:
            return tool_call("write_file", path="a.py", content=new + "X = 1\n")
        return "B done"

    model = FunctionModel(policy)
    body = lambda: parallel(agent("A", "write"), agent("B", "read"))  # noqa: E731
    result = await run_one(_agents("A", "B"), body, model, repo=repo)
    assert result.status == "ok", result.error
    b = _calls(model, "B")
    assert "a.py changed" not in _told(b[1])  # the call in flight kept its request
    notice = _told(b[2])
    assert "a.py changed: it is now version 1, written by A; you read version 0." in notice
    assert "-    return 1\n+    return 2" in notice and "f returns 2 now" in notice
    assert "version 1 by A: f returns 2 now" in str(b[3].messages[-1].content)  # its re-read
    writes = [e for e in of_type(result, "tool_executed") if e.tool == "write_file"]
    assert [e.ok for e in writes] == [True, True]
    told = of_type(result, "workspace_invalidated")
    assert [(e.agent, e.path, e.version, e.writer, e.seen) for e in told] == [
        ("B", "a.py", 1, "A", 0)
    ]
    assert (repo / "a.py").read_text().endswith("X = 1\n")


async def test_a_formatter_run_by_one_agent_is_listed_at_the_others_next_step(
    tmp_path: Path,
) -> None:
    for name in ("x", "y", "z"):
        (tmp_path / f"{name}.py").write_text(f"{name}=[1,2 ,3]\n")
    (tmp_path / "clean.py").write_text("ok = 1\n")
    ruff = Path(sys.executable).parent / "ruff"
    command = f"{ruff} format --no-cache ."
    a_ran = anyio.Event()

    async def policy(request: ModelRequest) -> Any:
        step = len(_calls(model, request.agent))
        if request.agent == "A":
            if step == 1:
                return tool_call("run_shell", command=command)
            a_ran.set()
            return "A done"
        if step == 1:
            await a_ran.wait()
            return tool_call("list_files")
        return "B done"

    model = FunctionModel(policy)
    body = lambda: parallel(agent("A", "format"), agent("B", "wait"))  # noqa: E731
    result = await run_one(_agents("A", "B"), body, model, repo=tmp_path)
    assert result.status == "ok", result.error
    told = _told(_calls(model, "B")[1])
    assert f"A ran `{command}` (exit code 0)" in told
    for name in ("x", "y", "z"):
        assert f"{name}.py (now version 1)" in told
    assert "clean.py" not in told
    (missed,) = of_type(result, "commands_missed")
    assert missed.agent == "B" and missed.commands[0]["files"] == {
        "x.py": 1,
        "y.py": 1,
        "z.py": 1,
    }
    assert missed.commands[0]["agent"] == "A" and missed.commands[0]["exit_code"] == 0
    # A is not told its own command.
    assert "ran `" not in "".join(_told(r) for r in _calls(model, "A"))


async def test_intent_notes_are_shown_once_to_a_reader_that_has_not_seen_them(
    repo: Path,
) -> None:
    a_wrote = anyio.Event()

    async def policy(request: ModelRequest) -> Any:
        step = len(_calls(model, request.agent))
        if request.agent == "A":
            if step == 1:
                return tool_call("read_file", path="a.py")
            if step == 2:
                return tool_call(
                    "edit", path="a.py", old="return 1", new="return 9", intent="nine is the answer"
                )
            if step == 3:
                return tool_call("read_file", path="a.py")  # its own note: not shown to it
            a_wrote.set()
            return "A done"
        if step == 1:
            await a_wrote.wait()
            return tool_call("read_file", path="a.py")
        if step == 2:
            return tool_call("read_file", path="a.py")
        return "B done"

    model = FunctionModel(policy)
    result = await run_one(
        _agents("A", "B"),
        lambda: parallel(agent("A", "edit"), agent("B", "read")),
        model,
        repo=repo,
    )
    assert result.status == "ok", result.error
    reads = [e for e in of_type(result, "tool_executed") if e.tool == "read_file"]
    by = {(e.agent, i): e.result for i, e in enumerate(reads)}
    a_read = [r for (who, _), r in sorted(by.items(), key=lambda kv: kv[0][1]) if who == "A"][1]
    b_reads = [r for (who, _), r in sorted(by.items(), key=lambda kv: kv[0][1]) if who == "B"]
    assert "nine is the answer" not in a_read
    assert "version 1 by A: nine is the answer" in b_reads[0]
    assert "nine is the answer" not in b_reads[1]
