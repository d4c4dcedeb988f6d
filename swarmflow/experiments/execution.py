"""`run_experiment`: every arm x task x repeat through the batch engine, each run graded.

Each arm is one batch (`OUT/arms/<arm>/`) over the task set's runs, task by task and repeat
by repeat, so the batch engine's rules hold for every run: a re-run skips the runs with a
result line, resumes the ones that were cut (a kill -9 included) from their journals, and
rebuilds the line of a run that ended before it was written; nothing finished is paid again.
Every run gets its own checkout of its task's repository (its `repo=`, given through its
task line). The arms' batches run as one group: one pool of workers (here or on Ray) serves
them all, and their runs start in the seeded, interleaved order `experiment.json` records
(`order.py`). A best-of-k arm runs as its k candidates (`bestof.py`): each a batch of the
group, their runs taking the arm's place in the order one after another. Each run is graded
as soon as its result line is written (a run an earlier call finished, once the batches are
over) and its grade appended to `OUT/grades.jsonl` (a graded run is never graded again), and
a best-of arm's choice is made once its k candidates of a task and repeat are graded; before
the first grading of the call, a grader that would run the products' code outside the
sandbox says so once (`grading_notes.py`). Then `OUT/rows.csv` is written whole, from the run
directories and the grades.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from swarmflow.batches.executor import ray_address
from swarmflow.batches.group import RUNS, BatchSpec, run_batches
from swarmflow.batches.lock import batch_lock
from swarmflow.batches.outcome import BatchResult
from swarmflow.batches.progress import Progress
from swarmflow.batches.results import TaskResult
from swarmflow.batches.tasks import as_tasks
from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.experiments.bestof import candidate_name, candidates, choose, record_choice
from swarmflow.experiments.checkouts import base_commit, checkout
from swarmflow.experiments.declaration import Arm, Experiment
from swarmflow.experiments.factors import factor_record, instance_map, run_options
from swarmflow.experiments.graders import TestsGrader
from swarmflow.experiments.grades import Grade, append_grade, read_grades
from swarmflow.experiments.grading import RunOutcome, grade_run
from swarmflow.experiments.grading_notes import (
    announce_unsandboxed,
    refuse_unsandboxed,
    unsandboxed_reason,
)
from swarmflow.experiments.layout import (
    Layout,
    RunDirs,
    RunKey,
    read_manifest,
    run_index,
    run_name,
    write_manifest,
)
from swarmflow.experiments.order import run_order
from swarmflow.experiments.progress import ExperimentProgress, ProgressHook
from swarmflow.experiments.rows import write_rows
from swarmflow.experiments.run_ids import check_derived_ids
from swarmflow.experiments.tasks import (
    ExperimentTask,
    item_counts,
    read_task_set,
    write_graded_tasks,
)
from swarmflow.runner.wiring import ModelSpec
from swarmflow.runtime.flow import Flow

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
    judge_model: ModelSpec
    on: str
    workers: int | None
    budget: Limits
    """Each batch's share of the call's budget (`_share`)."""
    run_budget: Limits
    """The call's cap on every run, over the declaration's."""
    order: list[RunKey]
    """The order in which the runs start, as `experiment.json` records it."""
    batches: list[Arm]
    """The arms that run as batches, in the group's order: every arm, a best-of arm as its
    k candidates (`<arm>.c1` ...)."""
    parents: dict[str, Arm]
    """A batch's name -> the declared arm it runs for (itself, or a candidate's arm)."""
    dirs: RunDirs
    """Each run's directory, as its arm's batch folder names it."""
    said: set[str] = field(default_factory=set)
    """What this call has said once already (grading outside the sandbox)."""


async def run_experiment(
    experiment: Experiment,
    *,
    out: str | Path,
    model: ModelSpec = None,
    demo: bool = False,
    on: str = "local",
    budget: Limits | Mapping[str, float] | None = None,
    run_budget: Limits | Mapping[str, float] | None = None,
    on_progress: ProgressHook | None = None,
    workers: int | None = None,
    first_tasks: int | None = None,
) -> ExperimentResult:
    """Run (or go on with) `experiment` in `out`; see the module's docstring.

    `model` is the model of every arm that names none; `demo=True` gives each arm its
    scripted offline policy instead. `budget` (tokens, cost) is the whole call's, split
    evenly between the batches (an arm, or one of a best-of arm's k candidates), so that no
    arm can spend what another is owed and the call never spends more; `run_budget`
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
    check_derived_ids(_all_keys(experiment, tasks))
    await anyio.to_thread.run_sync(refuse_unsandboxed, experiment.grader)
    total = len(experiment.arms) * len(tasks) * experiment.repeats
    batches = _batches(experiment)
    parents = {b.name: a for a in experiment.arms for b in _batches_of(a)}
    progress = ExperimentProgress(len(batches) * len(tasks) * experiment.repeats)
    with batch_lock(layout.root):
        write_manifest(layout, manifest_of(experiment, tasks))
        write_graded_tasks(layout, tasks, bases)
        plan = _Plan(
            experiment,
            layout,
            tasks,
            bases,
            progress,
            on_progress,
            _judge_model(experiment, model, demo),
            on,
            workers,
            _share(budget, len(batches)),
            Limits.coerce(run_budget),
            _order(experiment, tasks, layout),
            batches,
            parents,
            RunDirs(layout, [t.id for t in tasks], experiment.repeats),
        )
        earlier = read_grades(layout.grades, plan.progress.warnings)
        plan.progress.graded = sum(
            RunKey(b.name, t.id, r) in earlier
            for b in batches
            for t in tasks
            for r in range(1, experiment.repeats + 1)
        )
        results = await _all_arms(plan, models)
        finished = write_rows(layout, plan.progress.warnings)
    stopped = [f"{arm}: {r.stopped}" for arm, r in results.items() if r.stopped]
    return ExperimentResult(layout.root, total, finished, stopped, plan.progress.warnings)


async def _all_arms(plan: _Plan, models: dict[str, ModelSpec]) -> dict[str, BatchResult]:
    """Every arm's batch in one group, runs started in the recorded order, each finished run
    graded as its line is written (and those finished before, after). A mistake in one arm (a
    `ConfigError`) stops them all, as itself."""
    arms = plan.batches
    try:
        async with anyio.create_task_group() as group:
            grading = _Grading(plan, group, read_grades(plan.layout.grades, plan.progress.warnings))
            specs = [
                await _spec(plan, arm, models[plan.parents[arm.name].name], grading) for arm in arms
            ]
            done = await run_batches(
                specs,
                concurrency=plan.experiment.concurrency,
                order=_batch_order(plan),
                on=plan.on,
                workers=plan.workers,
            )
            for arm, result in zip(arms, done, strict=True):
                for line in result.results:
                    grading.grade(arm.name, line)
    except BaseExceptionGroup as group_error:
        mistake = group_error.subgroup(ConfigError)
        if mistake is not None:
            raise _first(mistake) from None
        raise
    results = {arm.name: result for arm, result in zip(arms, done, strict=True)}
    for arm_name, result in results.items():
        plan.progress.warnings.extend(f"{arm_name}: {w}" for w in result.warnings)
    return results


class _Grading:
    """Grades each finished run once, `concurrency` at once, beside the runs still going; and
    makes a best-of arm's choice once the k candidates of a task and repeat are graded."""

    def __init__(self, plan: _Plan, group: anyio.abc.TaskGroup, graded: Mapping[RunKey, Grade]):
        self.plan = plan
        self.group = group
        self.taken = set(graded)
        """The runs graded or being graded (and the best-of choices made or being made)."""
        self.grades = dict(graded)
        """Every grade known to this call: the earlier ones and those it gave."""
        self.limiter = anyio.CapacityLimiter(plan.experiment.concurrency)
        self.tasks = {t.id: t for t in plan.tasks}
        self.keys = {
            arm.name: dict(zip(plan.dirs.names(arm.name), _keys(plan, arm.name), strict=True))
            for arm in plan.batches
        }
        """Batch -> its task id (its run's folder name) -> the run's key."""
        self.saying = anyio.Lock()
        """Held while the first grading says whether it runs outside the sandbox."""

    def grade(self, arm: str, line: TaskResult) -> None:
        """Grade the run of the batch `arm` whose result line this is, unless it has a grade
        (then, for a candidate graded before, its arm's choice may be due)."""
        key = self.keys[arm][line.task]
        if key in self.taken:
            self._choose_if_due(key)
            return
        self.taken.add(key)
        task = self.tasks[key.task]
        checkout = self.plan.layout.checkout(key) if task.repo else None
        outcome = RunOutcome(
            key, line.status, line.output, line.error, Path(line.run_dir), checkout
        )
        self.group.start_soon(self._one, task, outcome)

    async def _one(self, task: ExperimentTask, outcome: RunOutcome) -> None:
        """Grade one run, once this call has said whether grading is outside the sandbox."""
        async with self.saying:
            await _say_if_unsandboxed(self.plan)
        self.grades[outcome.key] = await _grade_one(self.plan, self.limiter, task, outcome)
        self._choose_if_due(outcome.key)

    def _choose_if_due(self, key: RunKey) -> None:
        """When `key` is a candidate's run and every candidate of its task and repeat is
        graded, make its arm's choice (once)."""
        arm = self.plan.parents[key.arm]
        if arm.best_of is None:
            return
        chosen = RunKey(arm.name, key.task, key.repeat)
        if chosen in self.taken:
            return
        found = [
            self.grades.get(RunKey(candidate_name(arm.name, c), key.task, key.repeat))
            for c in range(1, arm.best_of.k + 1)
        ]
        graded = [g for g in found if g is not None]
        if len(graded) < len(found):
            return  # a candidate not graded yet: its grade (or a later call) makes the choice
        self.taken.add(chosen)
        self.group.start_soon(self._choose, arm, chosen, graded)

    async def _choose(self, arm: Arm, key: RunKey, graded: list[Grade]) -> None:
        """The choice of a best-of arm for one task and repeat: recorded in its `chosen.json`,
        then its grade appended (a kill between the two makes it again, the same)."""
        task = self.tasks[key.task]
        try:
            async with self.limiter:
                candidate, grade = await choose(self.plan, arm, task, key.repeat, graded)
        except ConfigError:
            raise
        except Exception as exc:  # the arm's judge function: one line
            raise ConfigError(
                f"choosing the best of {arm.name!r} for {key.text} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        record_choice(self.plan.layout, arm.name, key, candidate)
        append_grade(self.plan.layout.grades, grade)
        if self.plan.on_progress is not None:
            self.plan.on_progress(self.plan.progress)


def _keys(plan: _Plan, arm: str) -> list[RunKey]:
    """The arm's runs in its batch's task order: task by task, repeat by repeat."""
    repeats = range(1, plan.experiment.repeats + 1)
    return [RunKey(arm, t.id, r) for t in plan.tasks for r in repeats]


def _batch_order(plan: _Plan) -> list[tuple[int, int]]:
    """The order of the runs, as (arm's batch, the run's place in that batch)."""
    arms = {arm.name: index for index, arm in enumerate(plan.batches)}
    tasks = {t.id: index for index, t in enumerate(plan.tasks)}
    repeats = plan.experiment.repeats
    return [(arms[key.arm], run_index(tasks[key.task], key.repeat, repeats)) for key in plan.order]


def _order(experiment: Experiment, tasks: list[ExperimentTask], layout: Layout) -> list[RunKey]:
    """The order `experiment.json` records (one recorded before orders were, its seed's);
    `ConfigError` when it is not an order of this declaration's runs (a best-of arm's k
    changed, say)."""
    recorded = read_manifest(layout.root).order
    seeded = _seeded_order(experiment, tasks)
    if not recorded:
        return seeded
    keys = []
    for text in recorded:
        arm, task, repeat = text.rsplit("/", 2)
        keys.append(RunKey(arm, task, int(repeat.removeprefix("r"))))
    if sorted(k.text for k in keys) != sorted(k.text for k in seeded):
        raise ConfigError(
            f"{layout.manifest} records another experiment (its runs differ); "
            "use a new --out folder for a changed declaration"
        )
    return keys


def _seeded_order(experiment: Experiment, tasks: list[ExperimentTask]) -> list[RunKey]:
    """The seed's order of the declared arms' runs (`order.py`), a best-of arm's place in
    each block taken by its k candidates, one after another, in candidate order."""
    arms = [arm.name for arm in experiment.arms]
    drawn = run_order(arms, [t.id for t in tasks], experiment.repeats, experiment.seed)
    batches = {arm.name: [b.name for b in _batches_of(arm)] for arm in experiment.arms}
    return [RunKey(name, key.task, key.repeat) for key in drawn for name in batches[key.arm]]


def _batches_of(arm: Arm) -> list[Arm]:
    """The batches `arm` runs as: itself, or its k candidates (`bestof.candidates`)."""
    return candidates(arm) if arm.best_of is not None else [arm]


def _batches(experiment: Experiment) -> list[Arm]:
    return [batch for arm in experiment.arms for batch in _batches_of(arm)]


def _all_keys(experiment: Experiment, tasks: list[ExperimentTask]) -> list[RunKey]:
    """Every run of the experiment, arm by arm, a best-of arm's candidates' runs and its
    chosen ones (the ids derived from them are checked)."""
    repeats = range(1, experiment.repeats + 1)
    names = [arm.name for arm in experiment.arms if arm.best_of is not None]
    names += [b.name for b in _batches(experiment)]
    return [RunKey(name, t.id, r) for name in names for t in tasks for r in repeats]


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
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


def _model(arm: Arm, model: ModelSpec, demo: bool) -> ModelSpec:
    if demo:
        if arm.demo is None:
            raise ConfigError(f"arm {arm.name!r} has no scripted policy (Arm(demo=...)) for --demo")
        return arm.demo()
    chosen = arm.model if arm.model is not None else model
    if chosen is None:
        raise ConfigError(f"arm {arm.name!r} names no model: give one (--model) or Arm(model=...)")
    return chosen


def _judge_model(experiment: Experiment, model: ModelSpec, demo: bool) -> ModelSpec:
    if experiment.grader.kind != "rubric":
        return None
    if demo:
        if experiment.judge_demo is None:
            raise ConfigError("the rubric grader has no scripted judge (judge_demo=) for --demo")
        return experiment.judge_demo()
    return experiment.judge_model if experiment.judge_model is not None else model


def _share(budget: Limits | Mapping[str, float] | None, arms: int) -> Limits:
    """Each batch's even share of the call's budget (`arms`: the batches; a best-of arm's k
    candidates are k of them, so it can finish as many tasks as the others and the shares
    never add up to more than the whole)."""
    whole = Limits.coerce(budget)
    return Limits(
        tokens=None if whole.tokens is None else math.floor(whole.tokens / arms),
        cost=None if whole.cost is None else whole.cost / arms,
        calls=None if whole.calls is None else math.floor(whole.calls / arms),
        seconds=whole.seconds,
    )


def manifest_of(experiment: Experiment, tasks: list[ExperimentTask]) -> dict[str, object]:
    """What `experiment.json` records: what the report needs of the declaration."""
    return {
        "name": experiment.name,
        "arms": [_arm_record(experiment, arm) for arm in experiment.arms],
        "tasks": [t.id for t in tasks],
        "repeats": experiment.repeats,
        "grader": experiment.grader.kind,
        "grader_spec": (
            experiment.grader.model_dump(mode="json")
            if isinstance(experiment.grader, TestsGrader)
            else None
        ),
        "rubric": {t.id: len(t.rubric) for t in tasks if t.rubric},
        "pin_modes": experiment.pin_modes,
        "seed": experiment.seed,
        "order": [key.text for key in _seeded_order(experiment, tasks)],
        "tags": {t.id: list(t.tags) for t in tasks if t.tags},
        "ladder": list(experiment.ladder),
        "items": item_counts(tasks),
    }


def _arm_record(experiment: Experiment, arm: Arm) -> dict[str, object]:
    a = arm.assigned
    return {
        "name": arm.name,
        "reference": arm.reference,
        "controller": arm.controller,
        "delegation": a.delegation,
        "note": arm.note,
        "flow": arm.flow.name,
        "tools": None if a.tools is None else {k: list(v) for k, v in a.tools.items()},
        "context": None if a.context is None else list(a.context),
        "limits": experiment.run_limits(arm).given(),
        "debris": list(arm.debris),
        "factors": factor_record(arm.factors, arm.flow),
        "best_of": None if arm.best_of is None else arm.best_of.record(),
    }


async def _spec(plan: _Plan, arm: Arm, model: ModelSpec, grading: _Grading) -> BatchSpec:
    """The arm's batch (or a best-of candidate's): its flow, its factors written in, over its
    runs' task lines, into `OUT/arms/<arm>/`, with the run options its factors need."""
    flow = arm.variant()
    keys = _keys(plan, arm.name)
    lines = [await _inputs(plan, arm, key, flow) for key in keys]
    tasks = as_tasks(lines, names=[run_name(key.task, key.repeat) for key in keys])

    def tell(progress: Progress) -> None:
        plan.progress.arms[arm.name] = progress
        if plan.on_progress is not None:
            plan.on_progress(plan.progress)

    root = plan.layout.arm(arm.name)
    await anyio.Path(root / RUNS).mkdir(parents=True, exist_ok=True)
    limits = plan.run_budget.over(plan.experiment.run_limits(arm))
    options: dict[str, object] = {"model": model, "pin_modes": plan.experiment.pin_modes}
    options.update(run_options(arm.factors, plan.layout.root, arm.name))
    return BatchSpec(
        flow,
        tasks,
        root,
        options,
        run_budget=limits,
        budget=plan.budget,
        on_progress=tell,
        on_line=lambda line: grading.grade(arm.name, line),
    )


async def _inputs(plan: _Plan, arm: Arm, key: RunKey, flow: Flow[..., object]) -> dict[str, object]:
    """A run's task line: the task's inputs, the arm's, its checkout as `repo`, its repeat."""
    task = next(t for t in plan.tasks if t.id == key.task)
    line: dict[str, object] = {**task.inputs, **arm.inputs}
    if "repeat" in flow.signature.parameters:
        line["repeat"] = key.repeat
    if "instances" in flow.signature.parameters:  # the `instances` factor, for the flow's code
        line["instances"] = instance_map(arm.flow, arm.factors)
    if task.repo:
        where = await checkout(Path(task.repo), plan.bases[task.id], plan.layout.checkout(key))
        line["repo"] = str(where)
    return line


async def _say_if_unsandboxed(plan: _Plan) -> None:
    """Before the first grading of this call that would run a product's code outside the
    sandbox, say so once (`grading_notes.py`)."""
    if "unsandboxed" in plan.said:
        return
    plan.said.add("unsandboxed")
    reason = await anyio.to_thread.run_sync(unsandboxed_reason, plan.experiment.grader)
    if reason is not None:
        root, name = plan.layout.root, plan.experiment.name
        warnings = plan.progress.warnings
        await anyio.to_thread.run_sync(announce_unsandboxed, root, name, reason, warnings)
        if plan.on_progress is not None:
            plan.on_progress(plan.progress)


async def _grade_one(
    plan: _Plan, limiter: anyio.CapacityLimiter, task: ExperimentTask, outcome: RunOutcome
) -> Grade:
    """Grade one run and append its line at once (one write: a kill leaves it whole)."""
    async with limiter:
        grade = await _graded(plan, task, outcome)
    append_grade(plan.layout.grades, grade)
    plan.progress.graded += 1
    if plan.on_progress is not None:
        plan.on_progress(plan.progress)
    return grade


async def _graded(plan: _Plan, task: ExperimentTask, outcome: RunOutcome) -> Grade:
    try:
        base = plan.bases.get(task.id, "")
        arm = plan.parents[outcome.key.arm]
        return await grade_run(
            plan.experiment.grader,
            task,
            outcome,
            plan.layout,
            base=base,
            judge_model=plan.judge_model,
            debris=arm.debris,
        )
    except ConfigError:
        raise
    except Exception as exc:  # the grader's own code (a function grader): one line
        raise ConfigError(
            f"grading {outcome.key.text} failed: {type(exc).__name__}: {exc}"
        ) from None
