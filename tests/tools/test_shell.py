"""`run_shell` on the host (`sandbox="none"`): exit codes, timeouts, output caps, scrubbed
environment, working directory. The sandbox itself is tested in test_sandbox.py."""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from swarmflow.core.ports import ToolContext
from swarmflow.tools import ToolRegistry, scrubbed_env
from swarmflow.tools.shell import OUTPUT_CAP, CappedOutput


async def test_non_zero_exit_is_an_observation(
    registry: ToolRegistry, host_ctx: ToolContext
) -> None:
    result = await registry.execute("run_shell", {"command": "echo oops >&2; exit 3"}, host_ctx)
    assert result.ok
    assert result.text == "exit code: 3\noops\n"
    assert result.value == 3


async def test_cwd_is_the_workspace_root(registry: ToolRegistry, host_ctx: ToolContext) -> None:
    assert host_ctx.workspace is not None
    result = await registry.execute("run_shell", {"command": "pwd -P"}, host_ctx)
    assert result.text == f"exit code: 0\n{host_ctx.workspace.root}\n"


async def test_secrets_are_scrubbed_from_the_environment(
    registry: ToolRegistry, host_ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-123")
    monkeypatch.setenv("github_token", "ghp-fake")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("SWARMFLOW_HARMLESS", "visible")
    result = await registry.execute("run_shell", {"command": "env"}, host_ctx)
    assert "SWARMFLOW_HARMLESS=visible" in result.text
    for leaked in ["sk-fake-123", "ghp-fake", "hunter2", "OPENAI_API_KEY"]:
        assert leaked not in result.text


def test_scrubbed_env_matches_names_case_insensitively() -> None:
    env = scrubbed_env({"AWS_SECRET_ACCESS_KEY": "x", "gcp_credentials": "y", "HOME": "/h"})
    assert env["HOME"] == "/h"
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "gcp_credentials" not in env


async def test_timeout_kills_the_whole_process_group(
    registry: ToolRegistry, host_ctx: ToolContext, root: Path
) -> None:
    command = "sleep 60 & echo $! > bg.pid; echo started; wait"
    result = await registry.execute("run_shell", {"command": command, "timeout": 0.5}, host_ctx)
    assert result.ok
    assert result.text.startswith(
        "stopped: the 0.5s time limit was reached after 0.5s; the command and every process it "
        "started were killed"
    )
    assert "started" in result.text
    assert _has_exited(int((root / "bg.pid").read_text()))


async def test_background_children_do_not_hold_the_call_open(
    registry: ToolRegistry, host_ctx: ToolContext, root: Path
) -> None:
    command = "sleep 60 & echo $! > bg.pid; echo done"
    result = await registry.execute("run_shell", {"command": command, "timeout": 30}, host_ctx)
    assert result.text == "exit code: 0\ndone\n"
    assert _has_exited(int((root / "bg.pid").read_text()))


async def test_long_output_keeps_head_and_tail(
    registry: ToolRegistry, host_ctx: ToolContext
) -> None:
    command = "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"
    result = await registry.execute("run_shell", {"command": command}, host_ctx)
    assert result.text.startswith("exit code: 0\nSTART\n")
    assert result.text.rstrip().endswith("END")
    assert "bytes of output omitted" in result.text
    assert len(result.text) < OUTPUT_CAP + 200


def test_capped_output_counts_what_it_drops() -> None:
    out = CappedOutput(cap=10)
    for chunk in [b"abc", b"defgh", b"ijklmnop", b"qrst"]:
        out.feed(chunk)
    assert out.text() == "abcde\n... [10 bytes of output omitted] ...\npqrst"
    small = CappedOutput(cap=10)
    small.feed(b"hello")
    assert small.text() == "hello"


async def test_timeout_is_capped(registry: ToolRegistry, host_ctx: ToolContext) -> None:
    result = await registry.execute("run_shell", {"command": "true", "timeout": 10_000}, host_ctx)
    assert result.text == "exit code: 0\n(no output)"


def _has_exited(pid: int) -> bool:
    """Wait (on the kernel, not a sleep) until `pid` has terminated; False if it will not."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], 5.0)
        return bool(readable)
    finally:
        os.close(fd)
