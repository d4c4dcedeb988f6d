"""The `run_shell` tool: a command in the workspace, with a timeout and a scrubbed environment.

A non-zero exit is an observation, not an error: the text reports the exit code. On timeout the
command's whole process group is killed; background children are also killed when the command
exits, since they would otherwise hold the output pipe open.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT

import anyio
from anyio.abc import ByteReceiveStream
from pydantic import BaseModel, Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.core.secrets import public_environment
from swarmflow.tools.base import ArgsModel, expect_args, root_of

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
OUTPUT_CAP = 16_000
# Pagers and credential prompts would wait forever on a pipe nobody types into.
QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


class RunShellArgs(ArgsModel):
    """Arguments of `run_shell`."""

    command: str = Field(description="Shell command, run with /bin/sh in the workspace root.")
    timeout: float = Field(
        DEFAULT_TIMEOUT,
        gt=0,
        description=f"Seconds before the command is killed (capped at {MAX_TIMEOUT:.0f}).",
    )


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    """How a command ended and what it printed (stdout and stderr together, capped)."""

    output: str
    exit_code: int | None
    timed_out: bool


class CappedOutput:
    """Keeps the head and the tail of a byte stream and counts what fell in between."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Take the next chunk of output."""
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        del self.tail[: max(0, len(self.tail) - self.half)]

    def text(self) -> str:
        """The kept output, with a marker where bytes were dropped."""
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head + tail
        return f"{head}\n... [{omitted} bytes of output omitted] ...\n{tail}"


class RunShell:
    """Runs a shell command in the workspace root."""

    name = "run_shell"
    description = (
        "Run a shell command in the workspace root and return its exit code and combined "
        f"stdout/stderr (long output keeps its head and tail). Default timeout "
        f"{DEFAULT_TIMEOUT:.0f}s, at most {MAX_TIMEOUT:.0f}s. No stdin; secrets are not in the "
        "environment."
    )
    args: type[BaseModel] = RunShellArgs
    needs_workspace = True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Run the command and report how it ended."""
        a = expect_args(args, RunShellArgs)
        timeout = min(a.timeout, MAX_TIMEOUT)
        outcome = await run_command(a.command, root_of(ctx, self.name), timeout)
        return ToolResult(describe(outcome, timeout), value=outcome.exit_code)


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: ours) without its secret variables (the one policy, `core.secrets`)."""
    return public_environment(env) | QUIET_ENV


async def run_command(command: str, cwd: Path, seconds: float) -> ShellOutcome:
    """Run `command` with /bin/sh in its own process group; kill the group on timeout."""
    out = CappedOutput()
    try:
        process = await anyio.open_process(
            command,
            cwd=cwd,
            env=scrubbed_env(),
            stdin=DEVNULL,
            stdout=PIPE,
            stderr=STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot start the command in {cwd}: {exc}") from None
    finished = False
    try:
        with anyio.move_on_after(seconds):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, process.stdout, out)
                await process.wait()
                finished = True
                kill_group(process.pid)
    finally:
        kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return ShellOutcome(out.text(), process.returncode if finished else None, not finished)


async def _pump(stream: ByteReceiveStream | None, out: CappedOutput) -> None:
    """Copy the process output into `out` until end of stream."""
    if stream is None:
        return
    async for chunk in stream:
        out.feed(chunk)


def kill_group(pgid: int) -> None:
    """SIGKILL a process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def describe(outcome: ShellOutcome, timeout: float) -> str:
    """The observation text: how the command ended, then its output."""
    output = outcome.output if outcome.output.strip() else "(no output)"
    if outcome.timed_out:
        head = f"timed out after {timeout:g}s; the command's process group was killed"
    else:
        head = f"exit code: {outcome.exit_code}"
    return f"{head}\n{output}"
