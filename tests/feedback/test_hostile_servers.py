"""Servers that misbehave: one that hangs, one that answers after the session's wait."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from swarmflow import agent
from swarmflow.core.messages import ModelRequest
from swarmflow.feedback.servers import KNOWN_SERVERS, ServerSpec, register
from swarmflow.testing import FunctionModel, tool_call
from tests.feedback.lsp_support import coder, evidence_of
from tests.harnesses.support import processes_with
from tests.runtime.helpers import of_type, run_one

FAKE = str(Path(__file__).with_name("fake_server.py"))
SPAWN_MARKER = f"lsp-detached-{uuid.uuid4().hex}"


@pytest.fixture(autouse=True)
def fake_servers() -> Iterator[None]:
    register(ServerSpec("hang", (sys.executable, FAKE, "hang")))
    register(ServerSpec("late", (sys.executable, FAKE, "late")))
    register(ServerSpec("spawn", (sys.executable, FAKE, "spawn", SPAWN_MARKER)))
    yield
    KNOWN_SERVERS.pop("spawn")
    KNOWN_SERVERS.pop("hang")
    KNOWN_SERVERS.pop("late")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "release")
    os.mkfifo(tmp_path / "published")
    return tmp_path


async def test_a_server_that_never_answers_times_out_and_the_run_goes_on(repo: Path) -> None:
    model = FunctionModel(
        lambda r: "done" if len(model.requests) > 1 else tool_call(
            "edit", path="a.py", old="x = 1", new="x = 2"
        )
    )  # fmt: skip
    worker = coder(servers=["hang"], start_timeout=0.5)
    result = await run_one([worker], lambda: agent("coder", "go"), model, repo=repo)
    assert result.status == "ok"
    (unavailable,) = of_type(result, "feedback_unavailable")
    assert unavailable.reason == "it did not answer initialize within 0.5s"
    assert (repo / "a.py").read_text() == "x = 2\n"  # the edit itself was not held up


async def test_diagnostics_after_the_wait_reach_a_later_step(repo: Path) -> None:
    async def policy(request: ModelRequest) -> Any:
        if len(model.requests) == 1:
            return tool_call("edit", path="a.py", old="x = 1", new="x = 2")
        if len(model.requests) == 2:
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync((repo / "release").write_text, "go")  # answer now
                await anyio.to_thread.run_sync((repo / "published").read_text)  # it answered
            return tool_call("read_file", path="a.py")
        return "done"

    model = FunctionModel(policy)
    worker = coder(servers=["late"], wait=0.05)
    result = await run_one([worker], lambda: agent("coder", "go"), model, repo=repo)
    assert result.status == "ok", result.error
    assert evidence_of(model.requests[1]) == ""
    assert "L1 late problem (fake)" in evidence_of(model.requests[2])
    # The pass outlived the wait (recorded then), and was recorded again when collected.
    assert [c.timed_out for c in of_type(result, "feedback_checked")] == [True, False]
    (posted,) = of_type(result, "diagnostics_posted")
    assert posted.late and posted.codes == ["L1"]


async def test_a_servers_detached_child_ends_with_a_run_that_ended_ok(repo: Path) -> None:
    """The server's own `setsid` child leaves its process group and session: the supervisor
    ends it all the same when the run ends well (the server itself exits politely)."""
    model = FunctionModel(
        lambda r: "done" if len(model.requests) > 1 else tool_call(
            "edit", path="a.py", old="x = 1", new="x = 2"
        )
    )  # fmt: skip
    result = await run_one([coder(servers=["spawn"])], lambda: agent("coder", "go"), model,
                           repo=repo)  # fmt: skip
    assert result.status == "ok" and not of_type(result, "feedback_unavailable")
    assert processes_with(SPAWN_MARKER) == []
