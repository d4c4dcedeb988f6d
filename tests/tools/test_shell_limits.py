"""`run_shell`'s resource limits, met by real processes: a command that runs into one ends
with an observation naming it, and the run goes on. Each runs on the host and, where
bubblewrap is here, in the sandbox (skipped with the reason otherwise)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, agent
from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import ModelRequest
from swarmflow.core.ports import ToolContext
from swarmflow.testing import FunctionModel, tool_call
from swarmflow.tools import RunShell, ShellLimits, ToolRegistry
from swarmflow.tools.sandbox import bwrap_problem
from swarmflow.workspaces import LocalWorkspace

from ..runtime.helpers import run_one
from .conftest import make_ctx

PROBLEM = bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")
MODES = ["none", pytest.param("bwrap", marks=needs_bwrap)]
MiB = 1 << 20
# Reserves 8 GiB of private memory without touching it: the limit refuses the mapping itself,
# and without one nothing is filled in.
ALLOCATE_8_GIB = (
    f"{sys.executable} -c 'import mmap; "
    'mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS); print("allocated")\''
)


def _ctx(root: Path, mode: str) -> ToolContext:
    return make_ctx(LocalWorkspace(root), declaration=Agent("coder", sandbox=mode))


async def _sh(limits: ShellLimits | None, ctx: ToolContext, command: str) -> str:
    registry = ToolRegistry([RunShell(limits)])
    result = await registry.execute("run_shell", {"command": command, "timeout": 30}, ctx)
    assert result.ok, result.text
    return result.text


@pytest.mark.parametrize("mode", MODES)
async def test_allocating_8_gib_fails_at_the_memory_limit(root: Path, mode: str) -> None:
    text = await _sh(None, _ctx(root, mode), ALLOCATE_8_GIB)
    assert text.startswith(
        "exit code: 1\nthe command exceeded its memory limit (4 GiB per process): an "
        "allocation past it failed"
    ), text
    assert "Cannot allocate memory" in text and "allocated" not in text.split("\n", 2)[2]


@pytest.mark.parametrize("mode", MODES)
async def test_a_write_past_the_file_size_limit_fails_there(root: Path, mode: str) -> None:
    text = await _sh(
        ShellLimits(file_size=MiB), _ctx(root, mode), f"head -c {2 * MiB} /dev/zero > big.bin"
    )
    assert text.split("\n")[1] == (
        "the command exceeded its file size limit (1 MiB per file): a write past it failed; "
        "write smaller files"
    ), text
    assert (root / "big.bin").stat().st_size == MiB


@pytest.mark.parametrize("mode", MODES)
async def test_a_cpu_spin_ends_at_the_cpu_limit(root: Path, mode: str) -> None:
    text = await _sh(ShellLimits(cpu=1), _ctx(root, mode), "while :; do :; done")
    assert not text.startswith("stopped:"), text
    assert text.split("\n")[1].startswith(
        "the command exceeded its CPU time limit (1 s of CPU per process) and was killed"
    ), text


@pytest.mark.parametrize("mode", MODES)
async def test_too_many_open_files_is_named(root: Path, mode: str) -> None:
    command = f"{sys.executable} -c 'files = [open(\"/dev/null\") for _ in range(200)]'"
    text = await _sh(ShellLimits(open_files=64), _ctx(root, mode), command)
    assert "the command exceeded its open files limit (64 per process)" in text, text
    assert "Too many open files" in text


@pytest.mark.skipif(os.getuid() == 0, reason="the kernel does not hold root to RLIMIT_NPROC")
async def test_a_fork_bomb_stops_at_the_processes_limit(root: Path) -> None:
    command = "for i in $(seq 200); do sleep 30 & done; echo all started"
    text = await _sh(ShellLimits(processes=20), _ctx(root, "none"), command)
    assert "the command could not start more processes" in text, text
    assert "all started" not in text


@needs_bwrap
async def test_a_sandboxed_command_cannot_raise_its_limits(root: Path) -> None:
    text = await _sh(None, _ctx(root, "bwrap"), f"ulimit -d unlimited; {ALLOCATE_8_GIB}")
    assert "exceeded its memory limit" in text and "Operation not permitted" in text, text


@pytest.mark.parametrize("mode", MODES)
async def test_a_closed_pipe_ends_its_writer_quietly(root: Path, mode: str) -> None:
    # The limits are set by a Python process, which ignores SIGPIPE: the command must not
    # inherit that, or `yes` would complain of a broken pipe instead of ending.
    assert await _sh(None, _ctx(root, mode), "yes | head -n 1") == "exit code: 0\ny\n"


def test_limits_must_be_positive_integers() -> None:
    for bad in ({"memory": 0}, {"cpu": -1}, {"file_size": 1.5}, {"open_files": "many"}):
        with pytest.raises(ConfigError, match=f"ShellLimits\\({next(iter(bad))}="):
            ShellLimits(**bad)


async def test_the_run_goes_on_after_a_limit(tmp_path: Path) -> None:
    steps = iter(
        [
            tool_call("run_shell", command=f"head -c {2 * MiB} /dev/zero > big.bin"),
            tool_call("run_shell", command="echo still here"),
            "done",
        ]
    )
    shown: list[str] = []

    def policy(request: ModelRequest) -> Any:
        shown[:] = [m.content for m in request.messages if m.role == "tool"]
        return next(steps)

    tools = [RunShell(ShellLimits(file_size=MiB))]  # this agent's own limits
    builder = Agent("builder", tools=tools, workspace="local", sandbox="none")
    repo = tmp_path / "repo"
    result = await run_one(
        [builder], lambda: agent("builder", "build"), FunctionModel(policy), repo=repo
    )
    assert result.status == "ok", result.error
    assert "exceeded its file size limit (1 MiB per file)" in shown[0]
    assert shown[1] == "exit code: 0\nstill here\n"
    assert (repo / "big.bin").stat().st_size == MiB
