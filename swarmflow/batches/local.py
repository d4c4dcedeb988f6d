"""`batch`: run one flow over many tasks, with bounded concurrency, here or on a Ray cluster.

Every run's ledger is a child of one batch ledger: a shared budget is the batch ledger's limits,
enforced by the same reserve-before-call contract as a single run's (on Ray, the batch ledger
lives in a Ray actor; `executor.py` picks where the runs go). Each task's run directory
is `OUT/runs/<task id>`, so a batch that was stopped goes on where it was: finished tasks (a line
in `OUT/results.jsonl`) are skipped and interrupted runs are resumed from their journals. With
`retry_failed=True` the tasks that failed are run again too (resumed from their journals), and
their new lines replace the old ones (`results.py` says how no line is lost or doubled). A run
that ended before its line was written gets its line rebuilt from its log (`recovered.py`),
and a run directory another live process holds is left alone. One batch at a time uses an
`OUT` folder (`lock.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from swarmflow.batches.executor import ray_address
from swarmflow.batches.group import RUNS, BatchSpec, ProgressHook, run_batches
from swarmflow.batches.outcome import BatchResult
from swarmflow.batches.tasks import as_tasks
from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.runner.lifecycle import RUN_OPTIONS
from swarmflow.runtime.flow import Flow

OWN_OPTIONS = ("budget", "run_id", "runs_root", "resume", "raise_on_failure", "parent_ledger")
"""`run` options that `batch` sets itself for every task."""


async def batch(
    flow: Flow[..., object],
    inputs: str | Path | Iterable[Mapping[str, Any]],
    /,
    *,
    out: str | Path = "batch",
    concurrency: int = 8,
    budget: Limits | Mapping[str, float] | None = None,
    run_budget: Limits | Mapping[str, float] | None = None,
    on_progress: ProgressHook | None = None,
    fsync: bool = False,
    on: str = "local",
    workers: int | None = None,
    retry_failed: bool = False,
    **run_options: Any,
) -> BatchResult:
    """Run `flow` once per task of `inputs` (a `.jsonl` path or mappings of flow inputs).

    At most `concurrency` runs at once. `budget` is shared by every run of this invocation
    (a run that finds it spent stops, and no further task starts); `run_budget` caps each run.
    `out` holds `results.jsonl` and `runs/<task id>/`; running the same batch again skips the
    tasks with a result and resumes the rest. `on_progress` is called as tasks start and end.
    Other keywords (`model`, `human`, `repo`, `prices`, ...) go to every `run`.
    `retry_failed=True` runs the tasks whose line says `failed` again as well, each resumed
    from its journal (its finished calls are replayed, not paid); the tasks that ended ok or
    paused are kept as they are. One batch at a time may use `out`: it is locked while the
    batch runs. Every result line is scrubbed of the secrets the runs' logs are scrubbed of.

    `on="ray"` (or `"ray://HOST:PORT"`) runs each task on a Ray cluster instead, as one call of
    a Ray actor (`workers` of them, by default one per CPU of the cluster), with the shared
    budget held in a Ray actor (docs/ray.md); it needs `swarmflow[ray]`.

    Raises:
        ConfigError: a bad task list, `concurrency` under 1, an option `run` does not take,
            an `on` that is not "local", "ray" or "ray://HOST:PORT", an `out` folder another
            batch is using (the message names its process), a results file that is not a
            regular file.
    """
    if not isinstance(flow, Flow):
        raise ConfigError(f"batch() needs a @flow, got {flow!r}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    _check_options(run_options)
    ray_address(on)
    if workers is not None and workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    spec = BatchSpec(
        flow,
        as_tasks(inputs),
        _prepare(out),
        _run_options(run_options),
        run_budget=Limits.coerce(run_budget),
        budget=Limits.coerce(budget),
        on_progress=on_progress,
        retry_failed=retry_failed,
        fsync=fsync,
    )
    [result] = await run_batches([spec], concurrency=concurrency, on=on, workers=workers)
    return result


def _prepare(out: str | Path) -> Path:
    """The batch folder, made absolute (runs must not depend on the cwd) and with `runs/`."""
    root = Path(out).resolve()
    (root / RUNS).mkdir(parents=True, exist_ok=True)
    return root


def _check_options(options: Mapping[str, Any]) -> None:
    own = sorted(set(options) & set(OWN_OPTIONS))
    if own:
        raise ConfigError(
            f"batch() sets {', '.join(own)} itself for each task; use budget=/run_budget= "
            "for budgets and out= for where the runs go"
        )
    unknown = sorted(set(options) - set(RUN_OPTIONS))
    if unknown:
        raise ConfigError(
            f"batch() got unknown option(s) {', '.join(unknown)}; it passes on only run()'s "
            f"options: {', '.join(o for o in RUN_OPTIONS if o not in OWN_OPTIONS)}"
        )


def _run_options(run_options: Mapping[str, Any]) -> dict[str, Any]:
    """What every task's `run()` gets besides its own run directory, ledger and budget."""
    options = dict(run_options)
    if options.get("repo") is not None:  # worktrees must not depend on a worker's cwd
        options["repo"] = Path(options["repo"]).resolve()
    return options
