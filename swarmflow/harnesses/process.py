"""Running a harness's program to its end, and making sure nothing of it is left.

The program starts under the one supervisor (`tools.supervisor`). It ends when it exits, at
its timeout, or when the caller's scope is cancelled (the endpoint stops it at the agent's
allowance; the run is cancelled). However it ends, the supervisor's subreaper kills every
descendant, detached ones included, and in the sandbox the sandbox's init is killed too,
which takes every process of the sandbox's PID namespace with it (`tools.shell.end_sandbox`).
If the run's own process is killed (`kill -9`), bwrap's `--die-with-parent` and the
subreaper's parent-death signal end the program all the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from subprocess import DEVNULL, PIPE

import anyio
from anyio.abc import ByteReceiveStream

from swarmflow.harnesses.launch import Launch
from swarmflow.tools.shell import CappedOutput, end_sandbox
from swarmflow.tools.supervisor import ended as end_supervised
from swarmflow.tools.supervisor import start as start_supervised

STDOUT_CAP = 4 << 20
STDERR_CAP = 8_000


@dataclass(frozen=True, slots=True)
class Exited:
    """How the program ended: its exit code (None when it was killed), what it printed."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool


async def run_program(launch: Launch, stdin: bytes | None, seconds: float) -> Exited:
    """Run `launch` for at most `seconds`; its whole process tree is gone when this returns
    (or raises, when cancelled)."""
    out, err = CappedOutput(STDOUT_CAP), CappedOutput(STDERR_CAP)
    argv, info, info_w = list(launch.argv), None, -1
    if launch.sandboxed:
        info, info_w = os.pipe()  # bwrap reports the host pid of the sandbox's init here
        at = argv.index("--unshare-all")
        argv[at:at] = ["--info-fd", str(info_w)]
    try:
        process = await start_supervised(
            argv,
            cwd=launch.cwd,
            env=launch.env,
            stdin=PIPE if stdin is not None else DEVNULL,
            stdout=PIPE,
            stderr=PIPE,
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
                tg.start_soon(_pump, process.stderr, err)
                if stdin is not None and process.stdin is not None:
                    tg.start_soon(_feed, process, stdin)
                await process.wait()  # the subreaper exits once its whole tree is gone
                finished = True
    finally:
        await end_supervised(process)
        if info is not None:
            with anyio.CancelScope(shield=True):
                await end_sandbox(info)
    code = process.returncode if finished else None
    return Exited(code, out.text(), err.text(), timed_out=not finished)


async def _feed(process: anyio.abc.Process, data: bytes) -> None:
    assert process.stdin is not None
    try:
        await process.stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # it stopped reading: what it read is its task
    finally:
        await process.stdin.aclose()


async def _pump(stream: ByteReceiveStream | None, out: CappedOutput) -> None:
    if stream is None:
        return
    async for chunk in stream:
        out.feed(chunk)
