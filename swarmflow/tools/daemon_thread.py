"""Sync tool functions run in daemon threads of swarmflow's own, awaited with anyio.

anyio's worker threads are not daemons: a sync tool stuck past its timeout (the call was
abandoned, Python cannot kill a thread) would keep the interpreter from exiting after the run
ended, so `swarmflow run` and `swarmflow batch` would hang at exit. A daemon thread does not
hold the process, and it holds no slot of anyio's shared thread limiter either, so stuck tools
cannot starve swarmflow's own file and workspace calls.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

T = TypeVar("T")
JOIN_SECONDS = 5.0
"""A bound on waiting for a thread that has already handed its result over to end."""


async def run_in_daemon_thread(work: Callable[[], T], name: str) -> T:
    """`work()` in a new daemon thread, with the caller's context variables.

    A cancellation (a timeout, the run ending) stops the wait at once and abandons the
    thread; whatever it returns later is dropped. What `work` raises, BaseExceptions
    included, is raised here.
    """
    done = anyio.Event()
    values: list[T] = []
    errors: list[BaseException] = []
    token = anyio.lowlevel.current_token()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            values.append(context.run(work))
        except BaseException as exc:  # handed to the waiting task, which decides
            errors.append(exc)
        # The event loop may be gone by now (the call was abandoned and the run ended).
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(done.set, token=token)

    thread = threading.Thread(target=target, name=f"swarmflow tool {name}", daemon=True)
    thread.start()
    await done.wait()
    # It has handed its result over and only has to return: once the call returns, no thread
    # is still running the tool (callers and tests may count on that).
    thread.join(JOIN_SECONDS)
    if errors:
        raise errors[0]
    return values[0]
