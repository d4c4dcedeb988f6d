"""Batches on a Ray cluster: each task is one call of a Ray async actor that runs its whole flow.

One pool of `workers` actors (by default one per CPU of the cluster, spread over its nodes by
Ray) serves every batch that runs at once (an experiment's arms): each actor holds every
batch's setup and runs up to concurrency / workers flows at once in its event loop; a task goes
to the actor with the fewest in flight, whichever batch it belongs to. The actors write events
and journals straight into the driver's run directories (so the batch folders must be on a path
every node shares: one machine, or a shared filesystem) and return the task's result line.
Each batch's shared budget is held by a `BudgetKeeper` actor of its own (ray_ledger.py). An
actor whose process dies is restarted and its calls retried, up to `RETRIES` times: a retried
task resumes from its journal. When the batches end, or are cancelled, their calls still
running are cancelled with `ray.cancel` and the actors are killed.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import ray
from ray import cloudpickle
from ray.exceptions import RayActorError, RayError, RayTaskError

from swarmflow.batches.attempt import run_task
from swarmflow.batches.ledger import BatchLedger
from swarmflow.batches.outcome import Unfinished
from swarmflow.batches.ray_ledger import ActorLedger, BudgetKeeper
from swarmflow.batches.results import TaskResult
from swarmflow.batches.setup import Setup
from swarmflow.batches.tasks import Task
from swarmflow.core.errors import ConfigError

RETRIES = 3
"""Restarts of a worker actor whose process died, and retries of each call it had running."""
ACTOR_PREFIX = "swarmflow-batch-"
"""Every actor of a batch is named `swarmflow-batch-<pool>-budget-<batch>` or `...-worker-<i>`."""
CANCEL_GRACE = 10.0
"""Seconds that cancelled runs get to record their end before their actors are killed."""


class BatchWorker:
    """A Ray async actor: runs whole flows of any of its batches in its event loop, one per call."""

    def __init__(self, setups: list[Setup], keepers: list[Any]) -> None:
        self.setups = setups
        self.keepers = keepers
        """Each batch's budget actor; None without a shared budget (a run has its own parent)."""

    async def run(self, batch: int, task: Task) -> TaskResult | Unfinished:
        s, keeper = self.setups[batch], self.keepers[batch]
        if not s.runs.is_dir():
            return TaskResult(
                task.id,
                task.inputs,
                "failed",
                run_dir=str(s.runs / task.id),
                error=f"ConfigError: the batch folder {s.runs.parent} is not on this Ray "
                f"worker's filesystem ({ray.util.get_node_ip_address()}): put it on a path "
                "every node shares",
            )
        if keeper is None:
            return await run_task(s, task, BatchLedger(s.budget))
        ledger = ActorLedger(keeper, task.id, s.budget)
        try:
            return await run_task(s, task, ledger)
        finally:
            # The run's last settlements are in the keeper's ledger before its result is
            # back: the batch reads the ledger then, and must find them counted.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
                await ledger.close()


@dataclass(slots=True)
class Spent:
    """The driver's view of the keeper's ledger, refreshed as tasks end."""

    spent_tokens: int = 0
    spent_cost: float = 0.0
    refused: str | None = None


class WorkerPool:
    """The worker actors every batch shares: each call goes to the least busy one."""

    def __init__(self, actors: list[Any], keepers: list[Any]) -> None:
        self.actors = actors
        self.keepers = keepers
        self.load = [0] * len(actors)
        self.running: set[Any] = set()
        self.cancelled: list[Any] = []

    async def call(self, batch: int, task: Task) -> TaskResult | Unfinished:
        """Run `task` of batch `batch` on the least busy actor; Ray's errors go up."""
        index = self.load.index(min(self.load))
        self.load[index] += 1
        call = self.actors[index].run.remote(batch, task)
        self.running.add(call)
        try:
            result: TaskResult | Unfinished = await call
        except (RayActorError, RayTaskError):
            raise
        except BaseException:  # the batch was cancelled: so is the remote run
            ray.cancel(call)
            self.cancelled.append(call)
            raise
        finally:
            self.load[index] -= 1
            self.running.discard(call)
        return result

    async def stop(self) -> None:
        """Cancel the calls still running, let them record their end, kill the actors."""
        for call in self.running:
            ray.cancel(call)
        calls = [*self.running, *self.cancelled]
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
            for call in calls:
                with contextlib.suppress(RayError):  # cancelled, as asked
                    await call
        for actor in [*self.actors, *(k for k in self.keepers if k is not None)]:
            ray.kill(actor, no_restart=True)


class RayExecutor:
    """One batch's view of the pool: its tasks, its budget actor, what it spent and lost."""

    def __init__(self, pool: WorkerPool, batch: int) -> None:
        self.pool = pool
        self.batch = batch
        self.keeper = pool.keepers[batch]
        self.spent = Spent()
        self.lost: list[str] = []

    @property
    def spending(self) -> Spent:
        return self.spent

    @property
    def refused(self) -> str | None:
        return self.spent.refused

    @property
    def stopped(self) -> str | None:
        if self.spent.refused is not None or not self.lost:
            return self.spent.refused
        return (
            f"{len(self.lost)} task(s) lost with their Ray worker after {RETRIES} retries "
            f"({', '.join(self.lost[:3])}); run the batch again to resume them"
        )

    async def run(self, task: Task) -> TaskResult | Unfinished:
        try:
            result = await self.pool.call(self.batch, task)
        except RayActorError as exc:  # the worker died more often than Ray retries
            self.lost.append(f"{task.id}: {type(exc).__name__}")
            return Unfinished(task.id)
        except RayTaskError as exc:  # a fault in the worker outside the run itself
            return TaskResult(task.id, task.inputs, "failed", error=_first_line(exc))
        await self._refresh(result)
        return result

    async def _refresh(self, result: TaskResult | Unfinished | None) -> None:
        if self.keeper is None:  # no shared budget: what the finished runs spent
            if isinstance(result, TaskResult):
                self.spent.spent_tokens += result.tokens
                self.spent.spent_cost += result.cost
            return
        tokens, cost, refused = await self.keeper.state.remote()
        # Spend only grows; answers to reads sent while tasks ended may come back in any
        # order, and an older one must not undo a newer one.
        self.spent.spent_tokens = max(self.spent.spent_tokens, tokens)
        self.spent.spent_cost = max(self.spent.spent_cost, cost)
        self.spent.refused = self.spent.refused or refused

    async def settle(self) -> None:
        """Every task has ended, each after its settlements reached the keeper: read the
        keeper's ledger once more, after every read sent as the tasks ended."""
        await self._refresh(None)


def _first_line(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None) or exc
    return f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1]}"


@asynccontextmanager
async def ray_executors(
    address: str, setups: Sequence[Setup], *, concurrency: int, workers: int | None = None
) -> AsyncIterator[list[RayExecutor]]:
    """One pool of worker actors (and a budget actor per batch with a shared budget) on the
    cluster at `address`, an executor per batch over it; killed when it closes."""
    started = _connect(address)
    try:
        pool = _start(list(setups), concurrency, workers)
        try:
            yield [RayExecutor(pool, index) for index in range(len(setups))]
        finally:
            await pool.stop()
    finally:
        if started:
            ray.shutdown()


def _connect(address: str) -> bool:
    """Connect to Ray unless this process already is; True when this call connected."""
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address or None, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "the default cluster (RAY_ADDRESS, or a new local one)"
        raise ConfigError(f"cannot connect to Ray at {where}: {exc}") from exc
    return True


def _start(setups: list[Setup], concurrency: int, workers: int | None) -> WorkerPool:
    count = min(workers or _cluster_cpus(), concurrency)
    try:  # sent inline with each actor's creation, so a restarted actor is built from it again
        cloudpickle.dumps(setups)
    except Exception as exc:
        raise ConfigError(
            "a batch on Ray sends the flow and run()'s options to its workers, but they cannot "
            f"be pickled: {exc}"
        ) from exc
    name = f"{ACTOR_PREFIX}{uuid.uuid4().hex[:12]}"
    keepers = [_keeper(f"{name}-budget-{i}", s) for i, s in enumerate(setups)]
    actor = ray.remote(BatchWorker)
    per_actor = math.ceil(concurrency / count)
    started = [
        actor.options(
            name=f"{name}-worker-{i}",
            max_concurrency=per_actor,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
            scheduling_strategy="SPREAD",
        ).remote(setups, keepers)
        for i in range(count)
    ]
    return WorkerPool(started, keepers)


def _keeper(name: str, setup: Setup) -> Any:
    """The budget actor of one batch; None without a shared budget (nothing to keep)."""
    if not BatchLedger(setup.budget).limited:
        return None
    return ray.remote(BudgetKeeper).options(name=name, num_cpus=0).remote(setup.budget)


def _cluster_cpus() -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))
