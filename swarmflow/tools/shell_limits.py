"""What one `run_shell` command may use: memory, CPU time, file size, open files, processes.

`ShellLimits` is given to a `RunShell` (`Agent("builder", tools=[RunShell(ShellLimits(
memory=16 << 30))])`); every command, sandboxed or not, starts under `limited.py`, which sets
the limits and execs it. After the command, `exceeded` reads how it ended and names the limit
it ran into, so the model learns why it failed instead of guessing.

The limits are per process (`setrlimit`): a command that starts many processes may use more
in all, up to its processes limit; only a cgroup could bound the sum, and none is used.
"""

from __future__ import annotations

import math
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from swarmflow.core.errors import ConfigError

GiB = 1 << 30
LIMITED = Path(__file__).with_name("limited.py")
"""The exec wrapper that sets the limits (standard library only)."""
_SIGNAL_EXIT = 128
"""A shell (and bwrap) reports a child killed by signal N as exit code 128 + N."""
# What programs print when they run into each limit (lowercase), most specific first.
_SIGNS = {
    "cpu": ("cpu time limit exceeded",),  # a shell's report of a child killed by SIGXCPU
    "file_size": ("file size limit exceeded", "file too large"),  # SIGXFSZ, EFBIG
    "memory": (
        "cannot allocate memory",  # ENOMEM
        "memoryerror",
        "out of memory",
        "bad_alloc",
        "memory exhausted",
        "failed to allocate",
        "memory allocation of",
        "could not reserve enough space",
    ),
    "open_files": ("too many open files",),  # EMFILE
    "processes": ("cannot fork", "can't fork", "fork: retry", "fork failed"),
}
_SIGNALS = {int(signal.SIGXCPU): "cpu", int(signal.SIGXFSZ): "file_size"}


@dataclass(frozen=True, slots=True)
class ShellLimits:
    """What each process of a `run_shell` command may use; None leaves a limit as it is."""

    memory: int | None = 4 * GiB
    """Bytes of private writable memory per process (its heap, stacks, anonymous mappings:
    `RLIMIT_DATA`); an allocation past it fails."""
    cpu: int | None = None
    """CPU seconds per process (`RLIMIT_CPU`, all its threads together); None: the
    command's timeout times the cores it may run on, which a command that ends in time never
    reaches, so it bounds only a process that outlives the command (a `setsid` one on the
    host, where no PID namespace kills it)."""
    file_size: int | None = GiB
    """The largest file a process may write, in bytes (`RLIMIT_FSIZE`)."""
    open_files: int | None = 8192
    """Open file descriptors per process (`RLIMIT_NOFILE`)."""
    processes: int | None = 2048
    """Processes and threads a command may add to those its user already runs
    (`RLIMIT_NPROC`, which counts the user's tasks system-wide; never applied to root)."""

    def __post_init__(self) -> None:
        for name in ("memory", "cpu", "file_size", "open_files", "processes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"ShellLimits({name}={value!r}): give a positive integer")

    def for_command(self, seconds: float) -> ShellLimits:
        """These limits for one command that may run `seconds`: its CPU limit filled in."""
        if self.cpu is not None:
            return self
        return replace(self, cpu=max(1, math.ceil(seconds * _cores())))


def _cores() -> int:
    """The CPUs this process may run on (and so its commands)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def limited_argv(limits: ShellLimits, argv: Sequence[str]) -> list[str]:
    """`argv` started under `limits` (applied before it runs, by `limited.py`)."""
    pairs = {
        "data": limits.memory,
        "cpu": limits.cpu,
        "fsize": limits.file_size,
        "nofile": limits.open_files,
        "nproc": limits.processes,
    }
    given = [f"{name}={value}" for name, value in pairs.items() if value is not None]
    return [sys.executable, "-I", "-S", str(LIMITED), *given, "--", *argv]


def exceeded(limits: ShellLimits, exit_code: int | None, output: str) -> str | None:
    """Which limit a command that ended with `exit_code` ran into, in words for the model;
    None when it ended well, or for a reason that is not a limit."""
    if exit_code is None or exit_code == 0:
        return None
    killed_by = _signal_of(exit_code)
    text = output.lower()
    for name, signs in _SIGNS.items():
        if getattr(limits, name) is None:
            continue
        if _SIGNALS.get(killed_by or 0) == name or any(sign in text for sign in signs):
            return _message(name, limits)
    return None


def _message(name: str, limits: ShellLimits) -> str:
    """What the model reads about the limit `name` (one it ran into)."""
    if name == "cpu":
        return (
            f"the command exceeded its CPU time limit ({limits.cpu:,} s of CPU per process) "
            "and was killed; make it do less work, or split it into shorter commands"
        )
    if name == "file_size":
        return (
            f"the command exceeded its file size limit ({size_text(limits.file_size or 0)} "
            "per file): a write past it failed; write smaller files"
        )
    if name == "memory":
        return (
            f"the command exceeded its memory limit ({size_text(limits.memory or 0)} per "
            "process): an allocation past it failed; use less memory (smaller inputs, fewer "
            "parallel jobs)"
        )
    if name == "open_files":
        return (
            f"the command exceeded its open files limit ({limits.open_files:,} per process); "
            "close files it no longer needs"
        )
    return (
        f"the command could not start more processes: it may add {limits.processes:,} "
        "processes and threads to those its user runs; start fewer at once"
    )


def _signal_of(exit_code: int) -> int | None:
    """The signal that killed the command: a negative code (the process itself) or 128 + N
    (reported by the shell or bwrap that ran it)."""
    if exit_code < 0:
        return -exit_code
    if _SIGNAL_EXIT < exit_code < _SIGNAL_EXIT + 64:
        return exit_code - _SIGNAL_EXIT
    return None


def size_text(size: int) -> str:
    """`size` bytes as people write it: 4 GiB, 1 MiB, 512 KiB, 1,000 bytes."""
    for unit, name in ((GiB, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit:
            value = size / unit
            return f"{value:.0f} {name}" if value == int(value) else f"{value:.1f} {name}"
    return f"{size:,} bytes"
