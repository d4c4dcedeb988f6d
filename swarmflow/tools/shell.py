"""The `run_shell` tool: a command in the workspace, sandboxed, with a timeout and limits.

Under bubblewrap (see `sandbox`) the command sees only the workspace, the system and Python,
read-only where they are not the workspace, and not the run's records; it has no network
unless the agent allows it, its own PID namespace and an environment holding only what the
agent declares. Without bubblewrap the run says so once and the command runs on the host with
a scrubbed environment in its own process group (`sandbox="none"` asks for that explicitly).
Either way it starts under resource limits (`shell_limits`): memory, CPU time and file size
per process, open files, and how many processes it may add.

A non-zero exit is an observation, not an error: the text reports the exit code, and the
limit the command ran into when it ran into one. The command stops at its timeout or a little
before the run's deadline, whichever comes first; every process it started is killed when it
ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.to_thread
from anyio.abc import ByteReceiveStream, Process
from pydantic import Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult, Workspace
from swarmflow.core.secrets import public_environment
from swarmflow.record.events import SandboxUnavailable
from swarmflow.record.runs_root import RUNS_ENV
from swarmflow.tools.base import ArgsModel, BuiltinTool, private_of, workspace_of
from swarmflow.tools.limits import TimeLimit, time_limit
from swarmflow.tools.sandbox import (
    QUIET_ENV,
    ShellPolicy,
    bwrap_argv,
    bwrap_problem,
    policy_from,
    sandbox_env,
)
from swarmflow.tools.shell_limits import ShellLimits, exceeded, limited_argv, size_text
from swarmflow.tools.supervisor import ended as end_supervised
from swarmflow.tools.supervisor import start as start_supervised

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
OUTPUT_CAP = 16_000
_log = logging.getLogger("swarmflow.sandbox")


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


@dataclass(frozen=True, slots=True)
class Launch:
    """What to start: the argument vector, its environment, directory and limits."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: Path
    sandboxed: bool
    limits: ShellLimits | None = None
    """Set before the command runs (`limited.py`); None starts it as it is."""


@runtime_checkable
class RunNotes(Protocol):
    """A workspace that shares its run's set of notices already given (the provider's)."""

    notes: set[str]


@runtime_checkable
class CommandLog(Protocol):
    """A workspace that logs the commands run in it and the files they changed (shared)."""

    async def command_started(self) -> Any:
        """What the files look like before the command."""

    async def command_finished(
        self, before: Any, *, command: str, session: str, exit_code: int | None
    ) -> Any:
        """Log the command with the files it changed since `before`."""


@runtime_checkable
class SandboxReadOnly(Protocol):
    """A workspace that needs paths outside its root visible, read-only, in the sandbox."""

    sandbox_read_only: tuple[Path, ...]


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


def _description(limits: ShellLimits) -> str:
    """What the model is told about the tool, its limits included."""
    bounds = [
        f"{size_text(limits.memory)} of memory" if limits.memory else "",
        f"files up to {size_text(limits.file_size)}" if limits.file_size else "",
    ]
    per_process = " and ".join(b for b in bounds if b)
    return (
        "Run a shell command in the workspace root and return its exit code and combined "
        f"stdout/stderr (long output keeps its head and tail). Default timeout "
        f"{DEFAULT_TIMEOUT:.0f}s, at most {MAX_TIMEOUT:.0f}s. No stdin; secrets are not in the "
        "environment. In the sandbox only the workspace is writable, there is no network "
        "unless allowed, and background processes end with the command."
        + (f" Each process may use {per_process}." if per_process else "")
    )


class RunShell(
    BuiltinTool[RunShellArgs],
    name="run_shell",
    workspace=True,
    description=_description(ShellLimits()),
):
    """Runs a shell command in the workspace root, in the sandbox when there is one, under
    resource limits (`RunShell(ShellLimits(memory=16 << 30))` changes them for the agents
    given this object, and what the model is told of them)."""

    def __init__(self, limits: ShellLimits | None = None) -> None:
        self.limits = limits if limits is not None else ShellLimits()
        self.description = _description(self.limits)

    async def call(self, args: RunShellArgs, ctx: ToolContext) -> ToolResult:
        """Run the command and report how it ended."""
        limit = time_limit(min(args.timeout, MAX_TIMEOUT))
        limits = self.limits.for_command(limit.seconds)
        launch = await prepare(args.command, ctx, limits)
        ws = workspace_of(ctx, self.name)
        if not isinstance(ws, CommandLog):
            outcome = await run_process(launch, limit.seconds)
            return ToolResult(describe(outcome, limit, limits), value=outcome.exit_code)
        before = await ws.command_started()
        code: int | None = None
        try:
            outcome = await run_process(launch, limit.seconds)
            code = outcome.exit_code
        finally:  # logged however it ended: the others are told what it changed
            with anyio.CancelScope(shield=True):
                await ws.command_finished(
                    before, command=args.command, session=ctx.session, exit_code=code
                )
        return ToolResult(describe(outcome, limit, limits), value=outcome.exit_code)


async def prepare(command: str, ctx: ToolContext, limits: ShellLimits | None = None) -> Launch:
    """How to run `command` for this agent: sandboxed, or on the host when it cannot be."""
    ws = workspace_of(ctx, RunShell.name)
    root = ws.root.resolve()
    policy = policy_from(ctx.declaration)
    if policy.mode == "none":
        return host_launch(command, root, policy, limits)
    problem = await anyio.to_thread.run_sync(bwrap_problem)
    if problem is None:
        extra = ws.sandbox_read_only if isinstance(ws, SandboxReadOnly) else ()
        hidden = private_of(ctx, root)
        # In a thread: showing a git directory reads its config with `git config`.
        argv = await anyio.to_thread.run_sync(bwrap_argv, root, command, policy, extra, hidden)
        # bwrap's own environment is readable in the sandbox (/proc/1/environ): keep it clean.
        return Launch(argv, sandbox_env(policy), root, sandboxed=True, limits=limits)
    if policy.mode == "bwrap":
        raise ToolError(
            f"agent {ctx.agent!r} runs commands only in the sandbox (sandbox='bwrap'), but "
            f"{problem}. The command was not run."
        )
    _say_once(ctx, ws, problem)
    return host_launch(command, root, policy, limits)


def host_launch(
    command: str, root: Path, policy: ShellPolicy, limits: ShellLimits | None = None
) -> Launch:
    """The command on the host: /bin/sh, a scrubbed environment plus the declared one.

    Nothing can hide the run's records from it, but nothing points it at them either: the
    runs root's variable is left out, and PWD names the workspace, not swarmflow's own
    directory.
    """
    env = scrubbed_env() | {"PWD": str(root)} | dict(policy.env)
    for name in (RUNS_ENV, "OLDPWD"):
        env.pop(name, None)
    return Launch(["/bin/sh", "-c", command], env, root, sandboxed=False, limits=limits)


_TOLD: set[str] = set()
"""The problems already printed by this process: a batch of many runs warns the terminal
once, while each run still records its own `sandbox_unavailable` event."""


def _say_once(ctx: ToolContext, ws: Workspace, problem: str) -> None:
    """Tell the event log once per run, and the terminal once per process, that commands
    run unsandboxed."""
    notes = ws.notes if isinstance(ws, RunNotes) else _fallback_notes(ws)
    if "sandbox_unavailable" in notes:
        return
    notes.add("sandbox_unavailable")
    reason = (
        f"{problem}. run_shell commands run on the host without a sandbox: they can read "
        "and write what your user can, the run directories (journals, event logs, board "
        "tokens) included; declare sandbox='none' on the agent to accept that, or "
        "sandbox='bwrap' to refuse it."
    )
    if problem not in _TOLD:
        _TOLD.add(problem)
        _log.warning("swarmflow: %s", reason)
    ctx.emit(SandboxUnavailable, reason=reason)


def _fallback_notes(ws: Workspace) -> set[str]:
    """Notices for a workspace that no provider made: kept on the workspace itself."""
    notes: set[str] | None = getattr(ws, "_swarmflow_notes", None)
    if notes is None:
        notes = set()
        with contextlib.suppress(AttributeError):
            ws._swarmflow_notes = notes  # type: ignore[attr-defined]
    return notes


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: ours) without its secret variables (the one policy, `core.secrets`)."""
    return public_environment(env) | QUIET_ENV


async def run_process(launch: Launch, seconds: float) -> ShellOutcome:
    """Run the launch under the supervisor: everything it started is gone when it ends."""
    out = CappedOutput()
    try:
        code = await run_to_end(launch, seconds, out)
    except OSError as exc:
        raise ToolError(f"cannot start the command in {launch.cwd}: {exc}") from None
    return ShellOutcome(out.text(), code, timed_out=code is None)


async def run_to_end(
    launch: Launch,
    seconds: float,
    out: CappedOutput,
    err: CappedOutput | None = None,
    stdin: bytes | None = None,
) -> int | None:
    """Run `launch` under the supervisor for at most `seconds`, its output into `out` (and its
    standard error into `err`, else into `out` too), `stdin` written to it; its exit code, None
    when it was stopped at `seconds`. Its whole process tree (in the sandbox, the sandbox's PID
    namespace) is gone when this returns, or raises when cancelled."""
    argv, info = list(launch.argv), None
    if launch.sandboxed:
        # bwrap reports the host pid of the sandbox's init on this pipe.
        info, info_w = os.pipe()
        argv[1:1] = ["--info-fd", str(info_w)]
    if launch.limits is not None:
        # Around bwrap, not inside: the processes limit counts the user's tasks on the host.
        argv = limited_argv(launch.limits, argv)
    try:
        process = await start_supervised(
            argv,
            cwd=launch.cwd,
            env=launch.env,
            stdin=DEVNULL if stdin is None else PIPE,
            stdout=PIPE,
            stderr=STDOUT if err is None else PIPE,
            pass_fds=(info_w,) if info is not None else (),
        )
    finally:
        if info is not None:
            os.close(info_w)
    finished = False
    try:
        with anyio.move_on_after(seconds):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, process.stdout, out)
                if err is not None:
                    tg.start_soon(_pump, process.stderr, err)
                if stdin is not None:
                    tg.start_soon(_feed, process, stdin)
                await process.wait()  # the subreaper exits once its whole tree is gone
                finished = True
    finally:
        await end_supervised(process)
        if info is not None:
            with anyio.CancelScope(shield=True):
                await end_sandbox(info)
    return process.returncode if finished else None


async def end_sandbox(info: int) -> None:
    """Kill the sandbox's init and wait until it is gone: the kernel then has killed every
    process of its PID namespace (killing bwrap alone leaves that teardown running)."""
    try:
        os.set_blocking(info, False)
        report = _read_available(info)
    finally:
        os.close(info)
    pid = _child_pid(report)
    if pid is None:
        return
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


def _read_available(fd: int) -> bytes:
    """What the pipe holds now, without waiting for more."""
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            data += chunk
    return data


def _child_pid(report: bytes) -> int | None:
    """The `child-pid` of bwrap's info report, if it wrote one."""
    try:
        value = json.loads(report.decode("utf-8", errors="replace") or "{}").get("child-pid")
    except ValueError:
        return None
    return value if isinstance(value, int) else None


async def run_command(command: str, cwd: Path, seconds: float) -> ShellOutcome:
    """Run `command` on the host with /bin/sh (no sandbox, the default limits), as
    `run_shell` falls back to."""
    limits = ShellLimits().for_command(seconds)
    return await run_process(host_launch(command, cwd, ShellPolicy(mode="none"), limits), seconds)


async def _feed(process: Process, data: bytes) -> None:
    """Write `data` to the process's standard input, then close it."""
    assert process.stdin is not None
    try:
        await process.stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # it stopped reading: what it read is its task
    finally:
        await process.stdin.aclose()


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


def describe(outcome: ShellOutcome, limit: TimeLimit, limits: ShellLimits | None = None) -> str:
    """The observation text: how the command ended (and the limit it ran into), its output."""
    output = outcome.output if outcome.output.strip() else "(no output)"
    if outcome.timed_out:
        head = (
            f"stopped: {limit.reason()} after {limit.seconds:.3g}s; the command and every "
            "process it started were killed"
        )
    else:
        head = f"exit code: {outcome.exit_code}"
        note = exceeded(limits, outcome.exit_code, outcome.output) if limits else None
        if note is not None:
            head += f"\n{note}"
    return f"{head}\n{output}"
