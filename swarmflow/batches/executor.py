"""Where a batch's tasks run: in this process, or on a Ray cluster (`on="ray"`).

The batch itself (task list, `results.jsonl`, resume, progress, summary) is the same for both;
an executor only runs one task at a time when asked and says what the shared budget did.
Batches run together (an experiment's arms) get one executor each from one pool: on Ray, one
set of worker actors serves every batch, so no batch waits for another's actors.
Nothing of Ray is imported unless `on` names it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

from swarmflow.batches.attempt import run_task
from swarmflow.batches.ledger import BatchLedger
from swarmflow.batches.outcome import Unfinished
from swarmflow.batches.progress import Spending
from swarmflow.batches.results import TaskResult
from swarmflow.batches.setup import Setup
from swarmflow.batches.tasks import Task
from swarmflow.core.errors import ConfigError

LOCAL = "local"
RAY = "ray"
RAY_CLIENT = "ray://"


class Executor(Protocol):
    """Runs one task when asked; at most `concurrency` are asked at once."""

    @property
    def spending(self) -> Spending: ...

    @property
    def refused(self) -> str | None:
        """Why the shared budget refused a call: the batch starts no further task."""

    @property
    def stopped(self) -> str | None:
        """Why tasks were left unfinished (the refusal, or workers lost for good), if any."""

    async def run(self, task: Task) -> TaskResult | Unfinished:
        """The task's result line, or `Unfinished` when it is left without one (a re-run of
        the batch resumes it)."""

    async def settle(self) -> None:
        """Every task has ended: bring `spending` up to what the shared budget counted."""


class LocalExecutor:
    """Runs each task in this process; every run's ledger is a child of one batch ledger."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.ledger = BatchLedger(setup.budget)

    @property
    def spending(self) -> Spending:
        return self.ledger

    @property
    def refused(self) -> str | None:
        return self.ledger.refused

    @property
    def stopped(self) -> str | None:
        return self.ledger.refused

    async def run(self, task: Task) -> TaskResult | Unfinished:
        return await run_task(self.setup, task, self.ledger)

    async def settle(self) -> None:
        """Nothing to wait for: the batch ledger is this process's own."""


def ray_address(on: str) -> str | None:
    """The Ray address `on` names ("" for Ray's default), or None for this process.

    Raises:
        ConfigError: `on` is neither "local", "ray" nor "ray://HOST:PORT".
    """
    if on == LOCAL:
        return None
    if on == RAY:
        return ""
    if on.startswith(RAY_CLIENT) and len(on) > len(RAY_CLIENT):
        return on
    raise ConfigError(
        f"on={on!r}: use 'local' (this process), 'ray' (the Ray cluster `ray.init()` finds, "
        "or a new local one) or 'ray://HOST:PORT' (a cluster's Ray Client address)"
    )


@asynccontextmanager
async def open_executors(
    on: str, setups: Sequence[Setup], *, concurrency: int, workers: int | None = None
) -> AsyncIterator[list[Executor]]:
    """An executor per batch from the one pool `on` names, open while the batches run (Ray:
    one set of worker actors for them all, killed when they close)."""
    address = ray_address(on)
    if address is None:
        yield [LocalExecutor(setup) for setup in setups]
        return
    try:
        from swarmflow.batches.ray_exec import ray_executors
    except ImportError as exc:
        raise ConfigError(
            f"on={on!r} needs Ray, which is not installed here ({exc}): "
            "pip install 'swarmflow[ray]'"
        ) from exc
    async with ray_executors(address, setups, concurrency=concurrency, workers=workers) as found:
        yield list(found)
