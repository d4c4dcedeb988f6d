"""`regrade_experiment` (`swarmflow experiment grade OUT`): grade a finished experiment again
from what it recorded, running no arm.

Every run with a result line is graded anew from its recorded product (its output in the
arm's `results.jsonl`, its checkout in `OUT/checkouts/`), against the tasks as they were
graded (`OUT/graded-tasks.jsonl`, base commits resolved), by the grader given or else the
one recorded (a `tests` grader is rebuilt from `experiment.json`). The new grades replace
`grades.jsonl` whole (the old file is kept as `grades.previous.jsonl`), each naming the grader
that gave it, and `rows.csv` is written again. No arm's model is called; a `rubric` grader's
judge is, in runs of its own. A best-of arm's candidates are graded again, and its choice
made again from their new grades where the grader chose (an oracle); a judge function's
recorded choice (`chosen.json`) is kept, with the chosen candidate's new grade.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread

from swarmflow.batches.lock import batch_lock
from swarmflow.batches.results import ResultsFile, TaskResult
from swarmflow.core.errors import ConfigError
from swarmflow.core.secrets import environment_redactor
from swarmflow.experiments.bestof import (
    candidate_name,
    chosen_grade,
    oracle_pick,
    read_chosen,
    record_choice,
)
from swarmflow.experiments.graders import Grader, TestsGrader
from swarmflow.experiments.grades import Grade, read_grades
from swarmflow.experiments.grading import RunOutcome, grade_run, grader_identity
from swarmflow.experiments.grading_notes import (
    announce_unsandboxed,
    refuse_unsandboxed,
    sandbox_required,
    unsandboxed_reason,
)
from swarmflow.experiments.layout import (
    ArmRecord,
    Layout,
    Manifest,
    RunDirs,
    RunKey,
    read_manifest,
)
from swarmflow.experiments.rows import write_rows
from swarmflow.experiments.tasks import ExperimentTask, read_task_set
from swarmflow.runner.wiring import ModelSpec

PREVIOUS = "grades.previous.jsonl"


@dataclass
class RegradeResult:
    """What one `regrade_experiment` call did."""

    out: Path
    grader: str
    """The identity of the grader that gave the new grades."""
    graded: int
    """Runs graded (a best-of arm's candidates' runs, not its choices)."""
    changed: int
    """Runs (and best-of choices) whose `resolved` differs from their previous grade."""
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Job:
    layout: Layout
    grader: Grader
    judge_model: ModelSpec
    tasks: dict[str, ExperimentTask]


async def regrade_experiment(
    out: str | Path,
    *,
    grader: Grader | None = None,
    judge_model: ModelSpec = None,
    require_sandbox: bool = False,
) -> RegradeResult:
    """Grade every finished run of the experiment in `out` again; see the module's docstring.
    `require_sandbox`: refuse to grade where the `tests` grader cannot run in bubblewrap.

    Raises:
        ConfigError: `out` holds no experiment, no graded tasks, or no grader that can be
            rebuilt (name one), or the grader must run in the sandbox where it cannot.
    """
    layout = Layout(Path(await anyio.Path(out).resolve()))
    manifest = read_manifest(layout.root)
    chosen = grader if grader is not None else _recorded(manifest, layout)
    if require_sandbox:
        chosen = sandbox_required(chosen)
    if chosen.kind == "rubric" and judge_model is None:
        raise ConfigError("a rubric grader needs its judge's model (--model)")
    await anyio.to_thread.run_sync(refuse_unsandboxed, chosen)
    job = _Job(layout, chosen, judge_model, {t.id: t for t in _graded_tasks(layout)})
    warnings: list[str] = []
    with batch_lock(layout.root):
        before = read_grades(layout.grades, warnings)
        work = _finished_runs(layout, manifest, warnings)
        reason = await anyio.to_thread.run_sync(unsandboxed_reason, chosen)
        if reason is not None and work:
            announce_unsandboxed(layout.root, manifest.name, reason, warnings)
        graded = await _grade_all(job, work)
        grades = graded + _choices(layout, manifest, graded)
        _replace_grades(layout, grades)
        write_rows(layout, warnings)
    changed = sum(g.resolved != before[g.key].resolved for g in grades if g.key in before)
    identity = grader_identity(chosen, judge_model)
    return RegradeResult(layout.root, identity, len(graded), changed, warnings)


def _recorded(manifest: Manifest, layout: Layout) -> Grader:
    if manifest.grader_spec is None:
        raise ConfigError(
            f"{layout.manifest} records a {manifest.grader} grader, which cannot be rebuilt "
            "from the record: name one (--grader file.py:NAME)"
        )
    return TestsGrader.model_validate(manifest.grader_spec)


def _graded_tasks(layout: Layout) -> list[ExperimentTask]:
    if not layout.graded_tasks.is_file():
        raise ConfigError(
            f"{layout.root} holds no {layout.graded_tasks.name}: run `swarmflow experiment run` "
            "on it once with this swarmflow to record the tasks as graded"
        )
    return read_task_set(layout.graded_tasks)


def _finished_runs(
    layout: Layout, manifest: Manifest, warnings: list[str]
) -> list[tuple[ArmRecord, RunKey, TaskResult]]:
    """Every run of the manifest that has a result line, with its arm and its line."""
    redactor = environment_redactor()
    lines: dict[str, dict[str, TaskResult]] = {}
    for arm in {batch.name: batch for batch, _, _ in _batch_runs(manifest)}.values():
        results = ResultsFile(layout.arm(arm.name), redactor)
        lines[arm.name] = results.read()
        warnings.extend(f"{arm.name}: {w}" for w in results.warnings)
    dirs = RunDirs.of(layout, manifest)
    found = [
        (arm, key, lines[arm.name].get(dirs.names(arm.name)[index]))
        for arm, index, key in _batch_runs(manifest)
    ]
    return [(arm, key, line) for arm, key, line in found if line is not None]


def _batch_runs(manifest: Manifest) -> list[tuple[ArmRecord, int, RunKey]]:
    """Every run that has a batch: the manifest's, a best-of arm's as its candidates'."""
    runs: list[tuple[ArmRecord, int, RunKey]] = []
    for arm, index, key in manifest.runs():
        k = int(arm.best_of.get("k", 0)) if arm.best_of else 0
        if not k:
            runs.append((arm, index, key))
            continue
        for c in range(1, k + 1):
            name = candidate_name(arm.name, c)
            candidate = arm.model_copy(update={"name": name, "best_of": None})
            runs.append((candidate, index, RunKey(name, key.task, key.repeat)))
    return runs


def _choices(layout: Layout, manifest: Manifest, grades: list[Grade]) -> list[Grade]:
    """Each best-of arm's grade of every task and repeat whose k candidates are graded: the
    oracle's choice made again, a judge's recorded one kept."""
    found = {g.key: g for g in grades}
    chosen: list[Grade] = []
    for arm, _, key in manifest.runs():
        if not arm.best_of:
            continue
        k, rule = int(arm.best_of.get("k", 0)), str(arm.best_of.get("rule", ""))
        graded = [
            found.get(RunKey(candidate_name(arm.name, c), key.task, key.repeat))
            for c in range(1, k + 1)
        ]
        complete = [g for g in graded if g is not None]
        if not k or len(complete) < k:
            continue
        if rule.startswith("oracle"):
            candidate = oracle_pick(complete) + 1
            record_choice(layout, arm.name, key, candidate)
        else:
            recorded = read_chosen(layout, arm.name).get(key.text)
            if recorded is None or not 1 <= recorded <= k:
                continue
            candidate = recorded
        chosen.append(chosen_grade(arm.name, rule, candidate, complete))
    return chosen


async def _grade_all(job: _Job, work: list[tuple[ArmRecord, RunKey, TaskResult]]) -> list[Grade]:
    """Grade the runs, four at once; the grades in the manifest's order."""
    grades: dict[RunKey, Grade] = {}
    limiter = anyio.CapacityLimiter(4)

    async def one(arm: ArmRecord, key: RunKey, line: TaskResult) -> None:
        async with limiter:
            grades[key] = await _grade(job, arm, key, line)

    async with anyio.create_task_group() as group:
        for arm, key, line in work:
            group.start_soon(one, arm, key, line)
    return [grades[key] for _, key, _ in work]


async def _grade(job: _Job, arm: ArmRecord, key: RunKey, line: TaskResult) -> Grade:
    task = job.tasks.get(key.task)
    if task is None:
        raise ConfigError(f"{job.layout.graded_tasks} has no task {key.task!r}")
    outcome = RunOutcome(
        key,
        line.status,
        line.output,
        line.error,
        Path(line.run_dir),
        job.layout.checkout(key) if task.repo else None,
    )
    try:
        return await grade_run(
            job.grader,
            task,
            outcome,
            job.layout,
            base=task.base,
            judge_model=job.judge_model,
            debris=tuple(arm.debris),
        )
    except ConfigError:
        raise
    except Exception as exc:  # the grader's own code (a function grader): one line
        raise ConfigError(f"grading {key.text} failed: {type(exc).__name__}: {exc}") from None


def _replace_grades(layout: Layout, grades: list[Grade]) -> None:
    """`grades.jsonl` replaced whole in one rename; the old one kept beside it."""
    data = b"".join(g.model_dump_json().encode("utf-8") + b"\n" for g in grades)
    temporary = layout.grades.with_name(f".{layout.grades.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    if layout.grades.exists():
        os.replace(layout.grades, layout.root / PREVIOUS)
    os.replace(temporary, layout.grades)
