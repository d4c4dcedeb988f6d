"""Tools from real MCP servers (the SDK's own server API), over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'swarmflow[mcp]'")

from swarmflow import Agent, ConfigError, Team, agent, flow, mcp_http, mcp_stdio, run, tool_policy
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def stdio_server(**options: Any) -> Any:
    return mcp_stdio(sys.executable, SERVER, **options)


def observations(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def scripted(*calls: Any) -> Callable[[ModelRequest], Any]:
    """One call per turn, then a final answer listing every observation as JSON."""
    pending = list(calls)

    def policy(request: ModelRequest) -> Any:
        return pending.pop(0) if pending else json.dumps(observations(request))

    return policy


async def run_dev(server: Any, policy: Callable[[ModelRequest], Any], **options: Any) -> Any:
    dev = Agent("dev", tools=[server, "submit"])
    model = FunctionModel(policy)

    @flow(team=Team([dev]))
    async def f() -> Any:
        return await agent("dev", "go")

    options.setdefault("raise_on_failure", False)
    result = await run(f, model=model, **options)
    return result, model


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def executed(result: Any) -> list[Any]:
    return [e for e in result.events if e.type == "tool_executed"]


async def test_stdio_server_tools_are_listed_called_and_stopped_with_the_run() -> None:
    result, model = await run_dev(
        stdio_server(),
        scripted(
            tool_call("add", a=2, b=40),
            tool_call("fail", message="disk on fire"),
            tool_call("add", a="two"),
            tool_call("pid"),
        ),
    )
    assert result.status == "ok"
    specs = {spec.name: spec for spec in model.requests[0].tools}
    assert sorted(specs) == ["add", "die", "fail", "pid", "submit"]
    assert specs["add"].description == "Add two integers."
    assert specs["add"].parameters["required"] == ["a", "b"]
    assert specs["add"].parameters["properties"]["a"]["type"] == "integer"
    added, failed, invalid, pid = json.loads(result.output.text)
    assert added == "42"
    assert "ToolServerError" in failed and "disk on fire" in failed
    assert "invalid arguments for tool 'add'" in invalid and "'two' is not of type" in invalid
    assert "expected fields: a, b" in invalid
    assert [e.ok for e in executed(result)] == [True, False, False, True]
    assert not alive(int(pid))


async def test_a_server_killed_mid_call_is_a_typed_failure_and_the_run_goes_on() -> None:
    result, _ = await run_dev(
        stdio_server(),
        scripted(tool_call("pid"), tool_call("die"), tool_call("add", a=1, b=1)),
    )
    assert result.status == "ok"
    pid, died, after = json.loads(result.output.text)
    assert died.startswith("ToolServerError: MCP server") and "'die'" in died
    assert after.startswith("ToolServerError:")
    assert not alive(int(pid))


async def test_the_server_stops_when_the_run_fails() -> None:
    seen: list[str] = []
    dev = Agent("dev", tools=[stdio_server()])

    def policy(request: ModelRequest) -> Any:
        if not observations(request):
            return tool_call("pid")
        seen.extend(observations(request))
        return "done"

    @flow(team=Team([dev]))
    async def f() -> Any:
        await agent("dev", "go")
        raise RuntimeError("the flow broke after the tool ran")

    result = await run(f, model=FunctionModel(policy), raise_on_failure=False)
    assert result.status == "failed" and "the flow broke" in str(result.error)
    assert not alive(int(seen[0]))


async def test_the_server_stops_when_the_run_is_cancelled() -> None:
    import anyio

    pids: list[int] = []
    dev = Agent("dev", tools=[stdio_server()])
    started = anyio.Event()

    def policy(request: ModelRequest) -> Any:
        if not observations(request):
            return tool_call("pid")
        pids.append(int(observations(request)[0]))
        started.set()
        return anyio.sleep_forever()

    @flow(team=Team([dev]))
    async def f() -> Any:
        return await agent("dev", "go")

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: run(f, model=FunctionModel(policy), raise_on_failure=False))
        await started.wait()
        group.cancel_scope.cancel()
    assert pids and not alive(pids[0])


async def test_a_server_that_cannot_start_fails_the_run_clearly() -> None:
    missing = mcp_stdio("/nonexistent/mcp-server-binary")
    result, _ = await run_dev(missing, scripted())
    assert result.status == "failed"
    assert "MCP server '/nonexistent/mcp-server-binary' could not start" in str(result.error)


async def test_include_and_prefix_choose_and_rename_tools() -> None:
    server = tool_policy(stdio_server(include=["add"], prefix="calc_"), max_output=1)
    result, model = await run_dev(server, scripted(tool_call("calc_add", a=50, b=50)))
    assert [s.name for s in model.requests[0].tools] == ["submit", "calc_add"]
    assert json.loads(result.output.text)[0].startswith("1\n... [output cut: 2 more")


async def test_a_tool_outside_the_include_list_is_refused() -> None:
    result, _ = await run_dev(stdio_server(include=["add"]), scripted(tool_call("die")))
    assert result.status == "ok"
    refused = [e for e in result.events if e.type == "tool_refused"]
    assert refused and refused[0].tool == "die"


async def test_include_naming_an_unknown_tool_fails_at_start() -> None:
    result, _ = await run_dev(stdio_server(include=["nope"]), scripted())
    assert result.status == "failed" and "no tools named ['nope']" in str(result.error)


def test_mcp_http_refuses_a_non_http_url() -> None:
    with pytest.raises(ConfigError, match="http:// or https://"):
        mcp_http("ftp://127.0.0.1/mcp")


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:  # uvicorn says when it listens
            if "Uvicorn running" in line:
                break
        else:
            pytest.fail("the MCP HTTP server did not start")
        drain = threading.Thread(target=process.stderr.read, daemon=True)  # keep the pipe empty
        drain.start()
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


async def test_streamable_http_server_tools_are_listed_and_called(
    http_server: tuple[str, subprocess.Popen[str]],
) -> None:
    url, process = http_server
    result, model = await run_dev(
        mcp_http(url), scripted(tool_call("add", a=1, b=2), tool_call("fail", message="nope"))
    )
    assert result.status == "ok"
    assert "add" in [s.name for s in model.requests[0].tools]
    added, failed = json.loads(result.output.text)
    assert added == "3" and failed.startswith("ToolServerError:") and "nope" in failed
    assert process.poll() is None  # a remote server outlives the run; only the link closes


async def test_a_streamable_http_server_killed_mid_run_is_a_typed_failure(
    http_server: tuple[str, subprocess.Popen[str]],
) -> None:
    url, process = http_server

    def policy(request: ModelRequest) -> Any:
        done = observations(request)
        if not done:
            return tool_call("add", a=1, b=1)
        if len(done) == 1:
            process.kill()
            process.wait()
            return tool_call("add", a=2, b=2)
        return json.dumps(done)

    result, _ = await run_dev(mcp_http(url), policy)
    assert result.status == "ok", repr(result.error)
    first, second = json.loads(result.output.text)
    assert first == "2" and second.startswith("ToolServerError: MCP server")
