"""Run a command so that every process it starts dies with it (Linux).

`python -I -S subreaper.py COMMAND [ARG...]` runs COMMAND as its child, with the same stdin,
stdout and stderr, and marks itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): a
descendant whose parent exits is re-parented here instead of to init, a `setsid` or
double-forked daemon included, since leaving a process group or session does not leave the
process tree. When COMMAND exits, or this process is told to stop (SIGTERM, SIGINT, SIGHUP,
or its parent dies: `PR_SET_PDEATHSIG`), every descendant still alive is killed and reaped,
and this process exits with COMMAND's status.

The MCP stdio servers swarmflow starts run under it. It imports only the standard library
(it runs with `-I -S`, outside any environment). What it cannot stop: a descendant that a
process outside the tree adopts (a service manager asked to start it), and SIGKILL of this
process itself (its orphans then go to init).

COMMAND runs in a process group of its own, not in this process's: a kill of COMMAND's group
(by the command itself, or by whoever started us) never takes this process with it, so there
is always someone left to reap what the group kill missed. Stop the whole tree by sending
SIGTERM to this process alone (`tools.supervisor.stop`).
"""

from __future__ import annotations

# `_signal` is the built-in module that `signal` wraps, and no `contextlib` or `typing`: they
# would pull in `enum`, `collections` and `re`, several times this wrapper's own start-up
# time, paid by every command swarmflow runs (`_signal` has no type stubs, hence the ignore).
import _signal as signal  # type: ignore[import-not-found]
import ctypes
import os
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def supported() -> bool:
    """Whether this platform has child subreapers (Linux 3.4 and later)."""
    return sys.platform == "linux"


def command_line(command: str, args: list[str]) -> list[str]:
    """The argument vector that runs `command` under this subreaper."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), command, *args]


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _children() -> list[int]:
    """The pids whose parent is this process (read from /proc)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def kill_descendants(group: int = 0) -> None:
    """SIGKILL COMMAND's process group (`group`, when given), then every child, and reap
    them until there are none: a killed child's own children are re-parented here, so they
    are the next round's children."""
    if group > 0:
        _quietly(os.killpg, group)
    while True:
        for pid in _children():
            _quietly(os.kill, pid)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _quietly(send: object, target: int) -> None:
    """SIGKILL `target` with `send` (`os.kill`, `os.killpg`); one that is gone is fine."""
    try:
        send(target, signal.SIGKILL)  # type: ignore[operator]
    except (ProcessLookupError, PermissionError):
        return


def _spawn(argv: list[str]) -> int:
    """Start `argv` as a child with our stdin, stdout and stderr; exit 127 if it cannot run."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)  # out of our group: a kill of its group leaves us to reap
            for number in _STOP_SIGNALS:
                signal.signal(number, signal.SIG_DFL)
            os.execvp(argv[0], list(argv))
        except OSError as exc:
            os.write(2, f"cannot run {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    return pid


def _release_pipes() -> None:
    """Drop our copies of stdin and stdout: the client sees end of file when the command's
    own ends close, not only when this process exits."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _wait_for(child: int) -> int:
    """Reap children (orphans that end meanwhile too) until `child` ends; its exit code."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return os.waitstatus_to_exitcode(status)


_command = 0
"""COMMAND's pid, which is also its process group's id (0 before it starts)."""


def _stop(number: int, _frame: object) -> None:
    kill_descendants(_command)
    os._exit(128 + number)


def main(argv: list[str]) -> int:
    if not argv:
        os.write(2, b"usage: subreaper.py COMMAND [ARG...]\n")
        return 2
    parent = os.getppid()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    for number in _STOP_SIGNALS:
        signal.signal(number, _stop)
    if os.getppid() != parent:  # the parent died before the death signal was armed
        return 128 + int(signal.SIGTERM)
    global _command
    child = _command = _spawn(argv)
    _release_pipes()
    code = _wait_for(child)
    kill_descendants(child)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
