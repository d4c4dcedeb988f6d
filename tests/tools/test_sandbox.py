"""`run_shell` under bubblewrap, attacked the way a hostile model would, through the real tool.

Each attack is refused or contained and nothing of the host leaks. Tests that need bubblewrap
skip with the reason when it is missing or cannot create namespaces here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketStream

from swarmflow.core.ports import ToolContext
from swarmflow.core.team import Agent
from swarmflow.record.events import SandboxUnavailable
from swarmflow.tools import ToolRegistry
from swarmflow.tools.sandbox import bwrap_problem
from swarmflow.workspaces import DefaultWorkspaces, LocalWorkspace

from .conftest import make_ctx

PROBLEM = bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")
REPO = Path(__file__).resolve().parents[2]


def _ctx(root: Path, **declared: Any) -> ToolContext:
    return make_ctx(LocalWorkspace(root), declaration=Agent("coder", **declared))


async def _sh(registry: ToolRegistry, ctx: ToolContext, command: str, timeout: float = 30) -> str:
    result = await registry.execute("run_shell", {"command": command, "timeout": timeout}, ctx)
    assert result.ok, result.text
    return result.text


def _host_processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (the host's own /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
    return found


@needs_bwrap
async def test_nothing_outside_the_workspace_is_visible(
    registry: ToolRegistry, root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-OUTSIDE")
    ctx = _ctx(root)
    text = await _sh(registry, ctx, f"cat {secret}; cat /etc/passwd; ls -A ..; ls -A ~")
    assert "TOP-SECRET-OUTSIDE" not in text
    assert "No such file" in text and "root:" not in text
    assert text.split("cat: /etc/passwd: No such file or directory\n")[1].startswith("ws\n")
    # Not the home directory's contents, not this repository (only its virtual environment).
    listing = await _sh(registry, ctx, f"ls -A {Path.home()} {REPO}; cat {REPO}/pyproject.toml")
    assert "pyproject.toml: No such file" in listing
    assert "swarmflow" not in listing.split("No such file")[0] or ".venv" in listing


@needs_bwrap
async def test_the_system_is_read_only_and_the_workspace_writable(
    registry: ToolRegistry, root: Path
) -> None:
    text = await _sh(registry, _ctx(root), "touch /usr/x; echo made > here.txt; cat here.txt")
    assert "Read-only file system" in text
    assert (root / "here.txt").read_text() == "made\n"


@needs_bwrap
async def test_parent_secrets_are_not_in_proc_or_the_environment(
    registry: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-hostile-parent-123")
    monkeypatch.setenv("HARMLESS_BUT_UNDECLARED", "plain-value-456")
    ctx = _ctx(root, env={"DECLARED": "yes"})
    text = await _sh(
        registry,
        ctx,
        "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat $f; echo; done; "
        "echo PIDS $(ls -d /proc/[0-9]* | wc -l)",
    )
    assert "sk-hostile-parent-123" not in text
    assert "plain-value-456" not in text
    assert "DECLARED=yes" in text
    # Only the sandbox's own processes (its init, the shell and the commands it runs).
    pids = int(text.rsplit("PIDS ", 1)[1].split()[0])
    assert pids <= 5


@needs_bwrap
async def test_no_network_unless_the_agent_allows_it(registry: ToolRegistry, root: Path) -> None:
    async def answer(stream: SocketStream) -> None:
        async with stream:
            await stream.send(b"hello-from-host\n")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    probe = (
        f"python -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), "
        'timeout=5); print(s.recv(100).decode())"'
    )
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        closed = await _sh(registry, _ctx(root), probe)
        opened = await _sh(registry, _ctx(root, network=True), probe)
        tg.cancel_scope.cancel()
    assert "hello-from-host" not in closed
    assert "Connection refused" in closed or "unreachable" in closed
    assert "hello-from-host" in opened


@needs_bwrap
async def test_background_and_setsid_processes_die_with_the_command(
    registry: ToolRegistry, root: Path
) -> None:
    marker = f"31{os.getpid() % 1000}.25"
    text = await _sh(
        registry,
        _ctx(root),
        f"setsid sleep {marker} & (setsid yes > /dev/null &); nohup sleep {marker} & echo left",
    )
    assert text == "exit code: 0\nleft\n"
    assert _host_processes_with(f"sleep {marker}") == []
    # And when the command times out instead of ending.
    text = await _sh(registry, _ctx(root), f"setsid sleep {marker} & sleep 60", timeout=0.5)
    assert text.startswith("stopped: the 0.5s time limit was reached")
    assert _host_processes_with(f"sleep {marker}") == []


@needs_bwrap
async def test_git_metadata_is_read_only_in_the_shell(registry: ToolRegistry, root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    text = await _sh(
        registry,
        _ctx(root),
        "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config; "
        "rm -rf .git; mv .git elsewhere; echo done",
    )
    assert "Read-only file system" in text or "busy" in text
    assert (root / ".git" / "config").read_text() == "[core]\n"


@needs_bwrap
async def test_python_and_pytest_work_in_the_sandbox(registry: ToolRegistry, root: Path) -> None:
    (root / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    text = await _sh(registry, _ctx(root), "python -m pytest -q -p no:cacheprovider test_one.py")
    assert "1 passed" in text


@needs_bwrap
async def test_declared_sandbox_is_used_when_required(registry: ToolRegistry, root: Path) -> None:
    text = await _sh(registry, _ctx(root, sandbox="bwrap"), "hostname")
    assert text == "exit code: 0\nsandbox\n"


async def test_without_bubblewrap_the_run_says_so_once(
    registry: ToolRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/nonexistent")
    monkeypatch.setattr("swarmflow.tools.shell._TOLD", set())  # as in a process of its own
    bwrap_problem.cache_clear()
    try:
        provider = DefaultWorkspaces(tmp_path / "run")
        events: list[tuple[type, dict[str, Any]]] = []

        def emit(cls: type, **fields: Any) -> None:
            events.append((cls, fields))

        for session in ("s1", "s2"):
            ws = await provider.acquire("local", "coder", session)
            ctx = make_ctx(ws, session, Agent("coder"), emit=emit)
            result = await registry.execute("run_shell", {"command": "echo ran"}, ctx)
            assert result.text == "exit code: 0\nran\n"
        notices = [fields for cls, fields in events if cls is SandboxUnavailable]
        assert len(notices) == 1
        assert "apt-get install bubblewrap" in notices[0]["reason"]
        assert "the run directories (journals, event logs, board tokens)" in notices[0]["reason"]
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
        assert "without a sandbox" in caplog.records[0].message

        strict = make_ctx(LocalWorkspace(tmp_path / "w"), declaration=Agent("c", sandbox="bwrap"))
        refused = await registry.execute("run_shell", {"command": "touch ran"}, strict)
        assert not refused.ok and "sandbox='bwrap'" in refused.text
        assert not (tmp_path / "w" / "ran").exists()

        opted_out = make_ctx(
            LocalWorkspace(tmp_path / "o"), declaration=Agent("c", sandbox="none"), emit=emit
        )
        before = len(events)
        await registry.execute("run_shell", {"command": "true"}, opted_out)
        assert len(events) == before
    finally:
        bwrap_problem.cache_clear()


@pytest.mark.parametrize("timeout", [30.0, 0.5])
async def test_a_host_commands_setsid_children_die_with_it(
    registry: ToolRegistry, root: Path, timeout: float
) -> None:
    """Without the sandbox (`sandbox="none"`: no PID namespace), a `setsid` or `nohup`
    child leaves the command's process group; it ends with the command all the same."""
    marker = f"32{os.getpid() % 1000}.{int(timeout * 100)}"
    command = f"setsid sleep {marker} & nohup sleep {marker} > /dev/null & echo left"
    if timeout < 1:
        command += "; sleep 60"
    result = await registry.execute(
        "run_shell", {"command": command, "timeout": timeout}, _ctx(root, sandbox="none")
    )
    assert result.text.startswith("exit code: 0" if timeout > 1 else "stopped:")
    assert _host_processes_with(f"sleep {marker}") == []
