"""SIGTERM stops the command line as Ctrl-C does, with its own word and exit status."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

INTERRUPTED, TERMINATED = 130, 143
"""128 + SIGINT, 128 + SIGTERM: what a shell reports for a program either signal stopped."""


_terminated = [False]


def _as_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM goes the way SIGINT goes: the event loop, when one runs, cancels its main task
    and only then raises `KeyboardInterrupt` (a signal raised at any bytecode could land in
    the middle of the loop's own code)."""
    _terminated[0] = True
    signal.raise_signal(signal.SIGINT)


def stop_on_sigterm() -> None:
    """Make SIGTERM stop this process as Ctrl-C does (for the command line's own process:
    a library caller keeps its own handlers).

    A process started with SIGINT ignored (a background job of a script) gets Python's own
    Ctrl-C handler back: without it the event loop installs none, and SIGTERM, passed on as
    SIGINT, would be ignored too. Ctrl-C stops a run cleanly (cancelled, resumable), so a
    SIGINT that reaches such a process is safe to obey."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _as_ctrl_c)


def stopped(exc: KeyboardInterrupt) -> tuple[str, int]:
    """How to say that `exc` stopped the command, and the exit status to end with."""
    if _terminated[0]:
        return "terminated", TERMINATED
    return "interrupted", INTERRUPTED


async def cancelled_on_sigterm(start: Callable[[], Awaitable[T]]) -> T:
    """`await start()`, cancelled when SIGTERM comes: the signal is received through the event
    loop (`anyio.open_signal_receiver`), so it is delivered wherever the run is; the run then
    ends as cancelled, and `KeyboardInterrupt` (said as "terminated") is raised here."""
    import anyio  # only when a run starts: the command line's parser loads no runtime

    done: list[T] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM) as received:
                async for _ in received:
                    _terminated[0] = True
                    group.cancel_scope.cancel()
                    return

        group.start_soon(watch)
        done.append(await start())
        group.cancel_scope.cancel()
    if _terminated[0]:
        raise KeyboardInterrupt
    return done[0]
