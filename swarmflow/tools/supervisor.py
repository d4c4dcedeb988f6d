"""The one supervisor of every process swarmflow starts: `run_shell`'s commands, a harness's
program (on the host and in the sandbox), language servers and MCP servers, the `tests`
grader.

Each starts under `subreaper` (a child subreaper that runs the command in a process group of
its own) in a session of its own. However it ends, the whole tree goes with it:

- the command exits (ok or failed): the subreaper kills and reaps every descendant left,
  detached and `setsid` ones included, before it exits itself;
- it is stopped (its timeout, its allowance, a cancelled run, `stop` of a server): `stop`
  sends SIGTERM to the subreaper alone, which kills the command's group and every descendant
  and exits; a subreaper that has not gone within `STOP_GRACE` seconds is killed with its
  group;
- swarmflow's own process is killed (`kill -9`): the subreaper's parent-death signal does
  the same.

A sandboxed command's PID namespace is also ended through bwrap's `--info-fd` report
(`tools.shell.end_sandbox`). Where there are no subreapers (not Linux), the command runs as
it is in its own session and `stop` kills that session's group.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process

from swarmflow.tools.subreaper import command_line, supported

STOP_GRACE = 5.0
"""Seconds a stopped subreaper has to kill its tree and exit before it is killed itself."""


def supervised(argv: Sequence[str]) -> list[str]:
    """`argv` as the supervisor starts it: under the subreaper (Linux), else as it is."""
    if not supported():
        return list(argv)
    return command_line(argv[0], list(argv[1:]))


async def start(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int | IO[bytes] | None,
    stdout: int | IO[bytes] | None,
    stderr: int | IO[bytes] | None,
    pass_fds: Sequence[int] = (),
) -> Process:
    """Start `argv` supervised, in a session of its own (`OSError` when it cannot start)."""
    return await anyio.open_process(
        supervised(argv),
        cwd=cwd,
        env=dict(env),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        pass_fds=pass_fds,
    )


def stop(pid: int) -> None:
    """Ask the supervised process `pid` to end its whole tree (SIGTERM to the subreaper
    alone: a group kill would take the subreaper and leave nobody to reap)."""
    number = signal.SIGTERM if supported() else signal.SIGKILL
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if supported():
            os.kill(pid, number)
        else:
            os.killpg(pid, number)


def kill(pid: int) -> None:
    """SIGKILL the supervised process's group: the last resort after `STOP_GRACE`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def ended(process: Process) -> None:
    """Stop `process` and wait until it is gone, shielded from cancellation: called from a
    `finally`, it must finish however the caller ends."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            stop(process.pid)
            with anyio.move_on_after(STOP_GRACE):
                await process.wait()
        if process.returncode is None:  # reaped, its pid may be another's: only if not
            kill(process.pid)
        await process.aclose()
