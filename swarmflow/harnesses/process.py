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

from dataclasses import dataclass

from swarmflow.tools.shell import CappedOutput, Launch, run_to_end

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
    code = await run_to_end(launch, seconds, out, err, stdin)
    return Exited(code, out.text(), err.text(), timed_out=code is None)
