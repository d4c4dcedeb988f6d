"""Run a command under resource limits: `python -I -S limited.py NAME=VALUE... -- COMMAND [ARG...]`.

Each `NAME=VALUE` lowers one limit of this process, soft and hard alike, then COMMAND replaces
it (exec): the limits hold from the command's first instruction, every process it starts
inherits them, and none of them can raise a limit again. Setting them here, in a process of
its own, and not in a `preexec_fn` keeps them out of swarmflow's process, where a function run
between fork and exec is not safe with threads.

- `data=BYTES`: private writable memory per process (`RLIMIT_DATA`: its heap, stacks and
  anonymous mappings; address space reserved but not writable is not counted, so runtimes
  that reserve large regions up front still start);
- `cpu=SECONDS`: CPU time per process (`RLIMIT_CPU`); SIGXCPU ends it, and SIGKILL a second
  later if it catches that;
- `fsize=BYTES`: the largest file a process may write (`RLIMIT_FSIZE`; SIGXFSZ, or EFBIG for
  a process that ignores the signal);
- `nofile=COUNT`: open file descriptors per process (`RLIMIT_NOFILE`);
- `nproc=COUNT`: processes and threads the command may add to those its user already runs
  (`RLIMIT_NPROC` counts every task of the real user id, system-wide, so the limit is set to
  the count found now plus COUNT; the kernel does not apply it to root).

A limit is only ever lowered: one above what this process already has keeps the current one.
Standard library only: it runs with `-I -S`, outside any environment.
"""

from __future__ import annotations

# `_signal` is the built-in module that `signal` wraps: `signal` imports `enum`, which would
# double this wrapper's start-up time (it has no type stubs, hence the ignore).
import _signal  # type: ignore[import-not-found]
import os
import resource
import sys

_LIMITS = {
    "data": resource.RLIMIT_DATA,
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
}
NAMES = tuple(_LIMITS)
"""The limits this wrapper sets, by the names the command line gives them."""


def user_tasks(uid: int) -> int:
    """Processes and threads of `uid` now (from /proc), as `RLIMIT_NPROC` counts them."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue  # gone meanwhile
    return count


def _lowered(current: int, wanted: int) -> int:
    """`wanted`, unless the current limit is lower already (RLIM_INFINITY is no limit)."""
    if current == resource.RLIM_INFINITY:
        return wanted
    return min(current, wanted)


def apply(name: str, value: int) -> None:
    """Lower the limit `name` to `value` (see the module's list for what each means)."""
    which = _LIMITS[name]
    soft, hard = value, value
    if name == "cpu":
        hard = value + 1  # SIGXCPU at the soft limit, SIGKILL at the hard one
    elif name == "nproc":
        if os.getuid() == 0:
            return  # root is never held to it; counting its tasks would be wasted
        soft = hard = user_tasks(os.getuid()) + value
    current_soft, current_hard = resource.getrlimit(which)
    hard = _lowered(current_hard, hard)
    soft = min(_lowered(current_soft, soft), hard)
    resource.setrlimit(which, (soft, hard))


def _parse(items: list[str]) -> dict[str, int]:
    """`NAME=VALUE` items as a mapping; ValueError naming the first one that is wrong."""
    found: dict[str, int] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in _LIMITS or not value.isdigit() or int(value) < 1:
            raise ValueError(f"bad limit {item!r}; give NAME=VALUE, NAME one of {NAMES}")
        found[name] = int(value)
    return found


def main(argv: list[str]) -> int:
    """Set the limits, then exec the command (127 when it cannot run, 2 for a bad call)."""
    split = argv.index("--") if "--" in argv else len(argv)
    if split >= len(argv) - 1:
        os.write(2, b"usage: limited.py NAME=VALUE... -- COMMAND [ARG...]\n")
        return 2
    try:
        for name, value in _parse(argv[:split]).items():
            apply(name, value)
    except (ValueError, OSError) as exc:
        os.write(2, f"limited.py: cannot set the limits: {exc}\n".encode())
        return 2
    command = argv[split + 1 :]
    # Python ignores these two, and an ignored signal stays ignored across exec: restored,
    # a write past the file size limit kills the writer, as a shell would (`subprocess` does
    # the same with `restore_signals`).
    for number in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(number, _signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"cannot run {command[0]}: {exc.strerror}\n".encode())
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
