"""Background work that belongs to a branch: the streams a branch opened stop when it ends.

A stream (`parallel.stream`, `pipeline`) is consumed by the branch that opened it, but its
producer runs beside that branch rather than inside one `await`. It runs in the task group
that runs the branch (the run's own group at the flow's top level), under the deadline in
force where the stream was opened, so it inherits that deadline as anyio's tasks do. When
the group is cancelled (`parallel(first=1)`, a cancel scope around the operator) the
producers stop with it at once. When the branch ends, however it ends, it stops the
producers it still owns and waits for them, so none outlives the branch's outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import TYPE_CHECKING

import anyio

from swarmflow.core.bindings import bound

if TYPE_CHECKING:
    from anyio.abc import TaskGroup


class Job:
    """One producer: its cancel scope, a flag raised once it has wound down, and the error
    that stopped it until its consumer claims it."""

    __slots__ = ("done", "error", "release", "scope")

    def __init__(self, release: Callable[[], None]) -> None:
        self.scope = anyio.CancelScope(deadline=anyio.current_effective_deadline())
        self.done = anyio.Event()
        self.error: Exception | None = None
        self.release = release

    def claim_error(self) -> Exception | None:
        error, self.error = self.error, None
        return error

    async def run(self, work: Callable[[], Awaitable[None]]) -> None:
        try:
            with self.scope:
                await work()
        finally:
            self.done.set()

    async def stop(self) -> None:
        """Cancel the producer, wait until it has wound down, and release what it fed."""
        self.scope.cancel()
        with anyio.CancelScope(shield=True):
            await self.done.wait()
        self.release()


class BranchWork:
    """The background jobs one branch started, run in the task group that runs the branch."""

    __slots__ = ("_group", "_jobs")

    def __init__(self, group: TaskGroup) -> None:
        self._group = group
        self._jobs: tuple[Job, ...] | list[Job] = ()  # a list from the first job: most have none

    def start(self, work: Callable[[], Awaitable[None]], release: Callable[[], None]) -> Job:
        """Run `work` beside the branch; `release` frees its consumer's end once it stopped."""
        job = Job(release)
        self._group.start_soon(job.run, work)
        if isinstance(self._jobs, tuple):
            self._jobs = []
        self._jobs.append(job)
        return job

    @property
    def started_any(self) -> bool:
        """Whether the branch started a job (most start none: no `finish` to await)."""
        return bool(self._jobs)

    async def stop(self) -> None:
        """Stop every job still running and wait for all of them (shielded)."""
        for job in self._jobs:
            job.scope.cancel()
        for job in self._jobs:
            await job.stop()

    async def finish(self) -> None:
        """Stop every job; raise the error of one whose consumer never claimed it.

        A mistake inside a stream the branch abandoned still fails the run.
        """
        await self.stop()
        for job in self._jobs:
            error = job.claim_error()
            if error is not None:
                raise error


_current: ContextVar[BranchWork | None] = ContextVar("swarmflow_branch_work", default=None)


def current_work() -> BranchWork | None:
    """The background work of the branch the caller runs in (None outside a run)."""
    return _current.get()


def enter_work(work: BranchWork) -> None:
    """Make `work` the current branch's background work for the rest of the current task."""
    _current.set(work)


def owning(work: BranchWork) -> AbstractContextManager[BranchWork]:
    """Make `work` the current branch's background work for the block."""
    return bound(_current, work)
