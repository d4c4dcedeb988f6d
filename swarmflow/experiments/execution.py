"""`run_experiment`: every arm x task x repeat through the batch engine, then graded.

Each arm is one batch (`OUT/arms/<arm>/`) over the task set's runs, task by task and repeat
by repeat, so the batch engine's rules hold for every run: a re-run skips the runs with a
result line, resumes the ones that were cut (a kill -9 included) from their journals, and
rebuilds the line of a run that ended before it was written; nothing finished is paid again.
Every run gets its own checkout of its task's repository (its `repo=`, given through its
task line). The arms run at once; each run, once its arm's batch is over, is graded and its
grade appended to `OUT/grades.jsonl` (a graded run is never graded again). Then
`OUT/rows.csv` is written whole, from the run directories and the grades.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from swarmflow.batches import batch
from swarmflow.batches.executor import ray_address
from swarmflow.batches.lock import batch_lock
from swarmflow.batches.tasks import task_id
from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.experiments.checkouts import base_commit, checkout
from swarmflow.experiments.declaration import Arm, Experiment
from swarmflow.experiments.factors import factor_record, instance_map, run_options
from swarmflow.experiments.grades import Grade, append_grade, read_grades
from swarmflow.experiments.grading import RunOutcome, grade_run
from swarmflow.experiments.layout import Layout, RunKey, write_manifest
from swarmflow.experiments.progress import ExperimentProgress, ProgressHook
from swarmflow.experiments.rows import write_rows
from swarmflow.experiments.tasks import ExperimentTask, item_counts, read_task_set

SUITE = "suite"
"""The folder a generated task set is written into (`Experiment(tasks=function)`)."""


@dataclass
class ExperimentResult:
    """What one `run_experiment` call left: counts, and why runs were left, if they were."""

    out: Path
    total: int
    finished: int
    stopped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def unfinished(self) -> int:
        return self.total - self.finished


@dataclass(frozen=True)
class _Plan:
    """What every arm of one call shares."""

    experiment: Experiment
    layout: Layout
    tasks: list[ExperimentTask]
    bases: dict[str, str]
    progress: ExperimentProgress
    on_progress: ProgressHook | None
    judge_model: Any
    batch_options: dict[str, Any]


async def run_experiment(
    experiment: Experiment,
    *,
    out: str | Path,
    model: Any = None,
    demo: bool = False,
    on: str = "local",
    budget: Limits | Mapping[str, float] | None = None,
    run_budget: Mapping[str, float] | None = None,
    on_progress: ProgressHook | None = None,
    workers: int | None = None,
    first_tasks: int | None = None,
) -> ExperimentResult:
    """Run (or go on with) `experiment` in `out`; see the module's docstring.

    `model` is the model of every arm that names none; `demo=True` gives each arm its
    scripted offline policy instead. `budget` (tokens, cost) is the whole call's, split
    evenly between the arms, so that no arm can spend what another is owed; `run_budget`
    caps each run (over the declaration's limits). `first_tasks` runs only the first tasks
    of the set (a pilot; its folder is another experiment's than the whole set's).

    Raises:
        ConfigError: a task set, repository or base commit that cannot be had, an arm
            without a model, an `out` that holds another experiment, a grader that fails.
    """
    ray_address(on)  # a bad `on` is refused before anything is made
    layout = Layout(Path(await anyio.Path(out).resolve()))
    await anyio.to_thread.run_sync(lambda: layout.root.mkdir(parents=True, exist_ok=True))
    tasks = _tasks(experiment, layout)[:first_tasks]
    bases = {t.id: await base_commit(Path(t.repo), t.base) for t in tasks if t.repo}
    models = {arm.name: _model(arm, model, demo) for arm in experiment.arms}
    total = len(experiment.arms) * len(tasks) * experiment.repeats
    runs = sum(a.best_of.k if a.best_of else 1 for a in experiment.arms)  # best-of: k each
    progress = ExperimentProgress(runs * len(tasks) * experiment.repeats)
    with batch_lock(layout.root):
        write_manifest(layout, manifest_of(experiment, tasks))
        plan = _Plan(experiment, layout, tasks, bases, progress, on_progress,
                     _judge_model(experiment, model, demo),
                     {"on": on, "workers": workers, "budget": _share(budget, experiment),
                      "run_budget": dict(run_budget or {})})  # fmt: skip
        earlier = read_grades(layout.grades, plan.progress.warnings)
        plan.progress.graded = sum(
            RunKey(arm.name, t.id, r) in earlier
            for arm in experiment.arms for t in tasks for r in range(1, experiment.repeats + 1)
        )  # fmt: skip
        results = await _all_arms(plan, models)
        finished = write_rows(layout, plan.progress.warnings)
    stopped = [f"{arm}: {r.stopped}" for arm, r in results.items() if r.stopped]
    return ExperimentResult(layout.root, total, finished, stopped, plan.progress.warnings)


async def _all_arms(plan: _Plan, models: dict[str, Any]) -> dict[str, Any]:
    """Every arm at once (on Ray one after another: each arm's batch takes the cluster's CPUs
    for its worker actors, and closes the Ray connection it opened); a mistake in one (a
    `ConfigError`) stops them all, as itself."""
    results: dict[str, Any] = {}
    on_ray = ray_address(plan.batch_options["on"]) is not None
    try:
        async with anyio.create_task_group() as group:
            for arm in plan.experiment.arms:
                if on_ray:
                    await _arm(plan, arm, models[arm.name], results)
                else:
                    group.start_soon(_arm, plan, arm, models[arm.name], results)
    except BaseExceptionGroup as group_error:
        mistake = group_error.subgroup(ConfigError)
        if mistake is not None:
            raise _first(mistake) from None
        raise
    return results


def _first(group: BaseExceptionGroup[Any]) -> BaseException:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def _tasks(experiment: Experiment, layout: Layout) -> list[ExperimentTask]:
    source = experiment.tasks
    if callable(source):
        try:
            source = source(layout.root / SUITE)
        except Exception as exc:  # the declaration's own code: one line, not a traceback
            raise ConfigError(
                f"the task set function failed: {type(exc).__name__}: {exc}"
            ) from None
    return read_task_set(Path(source))


def _model(arm: Arm, model: Any, demo: bool) -> Any:
    if demo:
        if arm.demo is None:
            raise ConfigError(f"arm {arm.name!r} has no scripted policy (Arm(demo=...)) for --demo")
        return arm.demo()
    chosen = arm.model if arm.model is not None else model
    if chosen is None:
        raise ConfigError(f"arm {arm.name!r} names no model: give one (--model) or Arm(model=...)")
    return chosen


def _judge_model(experiment: Experiment, model: Any, demo: bool) -> Any:
    if experiment.grader.kind != "rubric":
        return None
    if demo:
        if experiment.judge_demo is None:
            raise ConfigError("the rubric grader has no scripted judge (judge_demo=) for --demo")
        return experiment.judge_demo()
    return experiment.judge_model if experiment.judge_model is not None else model


def _share(budget: Limits | Mapping[str, float] | None, experiment: Experiment) -> Limits:
    """Each arm's even share of the call's budget."""
    whole = Limits.coerce(dict(budget) if isinstance(budget, Mapping) else budget)
    arms = len(experiment.arms)
    return Limits(
        tokens=None if whole.tokens is None else math.floor(whole.tokens / arms),
        cost=None if whole.cost is None else whole.cost / arms,
        calls=None if whole.calls is None else math.floor(whole.calls / arms),
        seconds=whole.seconds,
    )


def manifest_of(experiment: Experiment, tasks: list[ExperimentTask]) -> dict[str, Any]:
    """What `experiment.json` records: what the report needs of the declaration."""
    return {
        "name": experiment.name,
        "arms": [_arm_record(experiment, arm) for arm in experiment.arms],
        "tasks": [t.id for t in tasks],
        "repeats": experiment.repeats,
        "grader": experiment.grader.kind,
        "rubric": {t.id: len(t.rubric) for t in tasks if t.rubric},
        "tags": {t.id: list(t.tags) for t in tasks if t.tags},
        "ladder": list(experiment.ladder),
        "items": item_counts(tasks),
    }


def _arm_record(experiment: Experiment, arm: Arm) -> dict[str, Any]:
    a = arm.assigned
    return {
        "name": arm.name, "reference": arm.reference, "controller": arm.controller,
        "delegation": a.delegation, "note": arm.note, "flow": arm.flow.name,
        "tools": None if a.tools is None else {k: list(v) for k, v in a.tools.items()},
        "context": None if a.context is None else list(a.context),
        "limits": experiment.run_limits(arm),
        "factors": factor_record(arm.factors, arm.flow),
        "best_of": None if arm.best_of is None else arm.best_of.record(),
    }  # fmt: skip


async def _arm(plan: _Plan, arm: Arm, model: Any, results: dict[str, Any]) -> None:
    """The arm's batch, then the grade of every finished run without one."""
    if arm.best_of is not None:  # k candidate batches, then the choice (`bestof`)
        from swarmflow.experiments.bestof import run_best_of

        await run_best_of(plan, arm, model, results, _arm)
        return
    experiment, layout = plan.experiment, plan.layout
    flow = arm.variant()
    keys = [RunKey(arm.name, t.id, r) for t in plan.tasks for r in range(1, experiment.repeats + 1)]
    inputs = [await _inputs(plan, arm, key, flow) for key in keys]

    def tell(progress: Any) -> None:
        plan.progress.arms[arm.name] = progress
        if plan.on_progress is not None:
            plan.on_progress(plan.progress)

    options = dict(plan.batch_options)
    options["task_budget"] = {**experiment.run_limits(arm), **options.pop("run_budget")}
    options.update(run_options(arm.factors, layout.root, arm.name))
    done = await batch(flow, inputs, out=layout.arm(arm.name), model=model, on_progress=tell,
                       concurrency=experiment.concurrency, **options)  # fmt: skip
    results[arm.name] = done
    plan.progress.warnings.extend(f"{arm.name}: {w}" for w in done.warnings)
    await _grade_all(plan, keys, done.results)


async def _inputs(plan: _Plan, arm: Arm, key: RunKey, flow: Any) -> dict[str, Any]:
    """A run's task line: the task's inputs, the arm's, its checkout as `repo`, its repeat."""
    task = next(t for t in plan.tasks if t.id == key.task)
    line: dict[str, Any] = {**task.inputs, **arm.inputs}
    if "repeat" in flow.signature.parameters:
        line["repeat"] = key.repeat
    if "instances" in flow.signature.parameters:  # the `instances` factor, for the flow's code
        line["instances"] = instance_map(arm.flow, arm.factors)
    if task.repo:
        where = await checkout(Path(task.repo), plan.bases[task.id], plan.layout.checkout(key))
        line["repo"] = str(where)
    return line


async def _grade_all(plan: _Plan, keys: list[RunKey], results: list[Any]) -> None:
    """Grade every finished run of the arm that has no grade, `concurrency` at once."""
    layout = plan.layout
    graded = read_grades(layout.grades, plan.progress.warnings)
    by_id = {r.task: r for r in results}
    tasks = {t.id: t for t in plan.tasks}
    limiter = anyio.CapacityLimiter(plan.experiment.concurrency)
    async with anyio.create_task_group() as group:
        for index, key in enumerate(keys):
            line = by_id.get(task_id(index))
            if line is None or key in graded:
                continue
            task = tasks[key.task]
            outcome = RunOutcome(key, line.status, line.output, line.error, Path(line.run_dir),
                                 layout.checkout(key) if task.repo else None)  # fmt: skip
            group.start_soon(_grade_one, plan, limiter, task, outcome)


async def _grade_one(
    plan: _Plan, limiter: anyio.CapacityLimiter, task: ExperimentTask, outcome: RunOutcome
) -> None:
    """Grade one run and append its line at once (one write: a kill leaves it whole)."""
    async with limiter:
        grade = await _graded(plan, task, outcome)
    append_grade(plan.layout.grades, grade)
    plan.progress.graded += 1
    if plan.on_progress is not None:
        plan.on_progress(plan.progress)


async def _graded(plan: _Plan, task: ExperimentTask, outcome: RunOutcome) -> Grade:
    try:
        base = plan.bases.get(task.id, "")
        return await grade_run(plan.experiment.grader, task, outcome, plan.layout, base=base,
                               judge_model=plan.judge_model)  # fmt: skip
    except ConfigError:
        raise
    except Exception as exc:  # the grader's own code (a function grader): one line
        raise ConfigError(
            f"grading {outcome.key.text} failed: {type(exc).__name__}: {exc}"
        ) from None
