"""MCP servers written to break the run: cyclic and too-deep schemas, a `$ref` to a URL, and a
detached child that tries to outlive the run. Each is a real stdio server
(`hostile_mcp_server.py`, hand-written JSON-RPC) run through the public API."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'swarmflow[mcp]'")

from swarmflow import Agent, Team, agent, flow, mcp_stdio, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from swarmflow.tools import subreaper

from .test_mcp import executed, observations, run_dev, scripted

HOSTILE = str(Path(__file__).with_name("hostile_mcp_server.py"))
needs_subreaper = pytest.mark.skipif(
    not subreaper.supported(), reason="child subreapers are a Linux feature"
)


def hostile(*args: str) -> Any:
    return mcp_stdio(sys.executable, HOSTILE, *args)


def gone_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` has ended, waiting at most `seconds` for it (on its pidfd)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([pidfd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(pidfd)


def pid_in(pidfile: Path) -> int:
    return int(pidfile.read_text())


@pytest.fixture
def escapee(tmp_path: Path) -> Iterator[Path]:
    """The file the `spawn` server writes its detached child's pid to; the child is killed
    afterwards whatever the test found, so a failing test leaves no sleeper behind."""
    pidfile = tmp_path / "escapee.pid"
    yield pidfile
    if pidfile.exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid_in(pidfile), signal.SIGKILL)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("selfref", "its input schema refers to itself without end (# -> #)"),
        ("cyclic", "refers to itself without end (#/$defs/a -> #/$defs/b -> #/$defs/a)"),
        ("deep", "its input schema nests more than 64 levels deep"),
        ("invalid", "its input schema is not valid JSON Schema: 12 is not valid under any"),
    ],
)
async def test_a_tool_whose_schema_cannot_be_used_is_unusable_and_the_run_goes_on(
    mode: str, reason: str
) -> None:
    result, model = await run_dev(
        hostile(mode), scripted(tool_call("loop", text="a"), tool_call("echo", text="still here"))
    )
    assert result.status == "ok", repr(result.error)
    loop, echoed = json.loads(result.output.text)
    assert loop.startswith("ToolServerError: MCP tool 'loop' of server")
    assert reason in loop and loop.endswith("The call was not sent.")
    assert echoed == "still here"
    assert [e.ok for e in executed(result)] == [False, True]
    offered = {spec.name: spec for spec in model.requests[0].tools}
    assert offered["loop"].parameters == {"type": "object", "properties": {}}
    assert offered["loop"].description.startswith("(Unusable: its input schema")
    assert reason in offered["loop"].description
    assert offered["echo"].parameters["required"] == ["text"]


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that serves a schema and records every request it gets."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            """Quiet: the test reads what the server answered, not its access log."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/schema.json", hits
    finally:
        server.shutdown()
        server.server_close()


async def test_a_ref_to_a_url_is_never_fetched(schema_host: tuple[str, list[str]]) -> None:
    url, hits = schema_host
    result, _ = await run_dev(
        hostile("remote", url),
        scripted(tool_call("loop", text="a"), tool_call("loop"), tool_call("echo", text="ok")),
    )
    assert result.status == "ok", repr(result.error)
    with_ref, without, echoed = json.loads(result.output.text)
    assert "invalid arguments for tool 'loop'" in with_ref
    assert "could not be checked against the input schema" in with_ref and url in with_ref
    assert without == "called" and echoed == "ok"  # what needs no remote schema still works
    assert hits == []


@needs_subreaper
async def test_a_detached_child_of_the_server_dies_with_the_run(escapee: Path) -> None:
    result, _ = await run_dev(
        hostile("spawn", str(escapee)), scripted(tool_call("echo", text="hi"))
    )
    assert result.status == "ok", repr(result.error)
    assert json.loads(result.output.text) == ["hi"]
    assert gone_within(pid_in(escapee), 10)


@needs_subreaper
async def test_a_detached_child_dies_when_the_run_fails(escapee: Path) -> None:
    dev = Agent("dev", tools=[hostile("spawn", str(escapee))])

    @flow(team=Team([dev]))
    async def f() -> Any:
        await agent("dev", "go")
        raise RuntimeError("the flow broke")

    result = await run(f, model=FunctionModel(lambda _: "done"), raise_on_failure=False)
    assert result.status == "failed" and "the flow broke" in str(result.error)
    assert gone_within(pid_in(escapee), 10)


@needs_subreaper
async def test_a_detached_child_dies_when_the_run_is_cancelled(escapee: Path) -> None:
    dev = Agent("dev", tools=[hostile("spawn", str(escapee))])
    asked = anyio.Event()

    def policy(request: ModelRequest) -> Any:
        if not observations(request):
            return tool_call("echo", text="hi")
        asked.set()
        return anyio.sleep_forever()

    @flow(team=Team([dev]))
    async def f() -> Any:
        return await agent("dev", "go")

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: run(f, model=FunctionModel(policy), raise_on_failure=False))
        await asked.wait()
        group.cancel_scope.cancel()
    assert gone_within(pid_in(escapee), 10)


HOLDER = """
import sys, anyio
from swarmflow import mcp_stdio

async def main():
    async with mcp_stdio(sys.executable, {server!r}, "spawn", {pidfile!r}).open():
        print("ready", flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


@needs_subreaper
def test_a_detached_child_dies_when_swarmflow_is_killed(escapee: Path) -> None:
    script = HOLDER.format(server=HOSTILE, pidfile=str(escapee))
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        sleeper = pid_in(escapee)
        assert not gone_within(sleeper, 0)
    finally:
        holder.kill()  # SIGKILL: no cleanup of swarmflow's own runs
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert gone_within(sleeper, 10)
