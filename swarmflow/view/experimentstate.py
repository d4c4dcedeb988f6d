"""One experiment as the view shows it: progress per arm while it runs (each run started,
running, finished, graded, resolved), a cell per arm and task naming the runs behind it, and
once every run is graded, the experiment's report (its per-arm figures and its figures).

The record, the grades and the report are read through `swarmflow.experiments`; each run's
state through the view's run cache (the report's log reader).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swarmflow.experiments.bestof import candidate_runs, chosen_run
from swarmflow.experiments.grades import Grade, read_grades
from swarmflow.experiments.layout import (
    ArmRecord,
    Layout,
    Manifest,
    RunDirs,
    RunKey,
    read_manifest,
)
from swarmflow.experiments.report import ExperimentReport, read_experiment
from swarmflow.report.live import file_mark
from swarmflow.report.log import LogError
from swarmflow.view.runstate import StateCache


@dataclass(frozen=True, slots=True)
class RunCell:
    """One run of the experiment, as far as it has gone."""

    key: RunKey
    view_key: str
    """The run's key in the view's catalog ('' when it has not started)."""
    status: str
    """not started, unfinished (running or killed), ok, failed, cancelled, paused."""
    resolved: bool | None
    """Its grade, or None before it is graded."""


@dataclass
class ArmProgress:
    """How far one arm has gone."""

    name: str
    expected: int
    started: int = 0
    running: int = 0
    finished: int = 0
    graded: int = 0
    resolved: int = 0


@dataclass
class ExperimentState:
    """Everything the view shows of one experiment."""

    manifest: Manifest
    cells: dict[tuple[str, str], list[RunCell]]
    progress: list[ArmProgress]
    report: ExperimentReport | None = None
    """Read once every run is graded."""
    warnings: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return all(p.graded == p.expected for p in self.progress)

    def runs(self, arm: str = "", task: str = "") -> list[RunCell]:
        """The runs of one arm, one task, or one cell (all runs with neither)."""
        return [
            cell
            for (a, t), cells in self.cells.items()
            if (not arm or a == arm) and (not task or t == task)
            for cell in cells
        ]


def read_experiment_state(
    root: Path, runs: StateCache, view_key: Callable[[Path], str]
) -> ExperimentState:
    """The experiment in `root` now (`ConfigError` when it holds none); `view_key` names a run
    directory in the view's catalog."""
    manifest = read_manifest(root)
    layout = Layout(root)
    warnings: list[str] = []
    grades = read_grades(layout.grades, warnings)
    progress = {
        arm.name: ArmProgress(arm.name, len(manifest.tasks) * manifest.repeats)
        for arm in manifest.arms
    }
    cells: dict[tuple[str, str], list[RunCell]] = {
        (arm.name, task): [] for arm in manifest.arms for task in manifest.tasks
    }
    dirs = RunDirs.of(layout, manifest)
    for arm, _, key in manifest.runs():
        cell = _cell(_run_dir(dirs, arm, key), key, grades.get(key), runs, view_key)
        cells[(key.arm, key.task)].append(cell)
        _count(progress[key.arm], cell)
    return ExperimentState(manifest, cells, list(progress.values()), warnings=warnings)


def _run_dir(dirs: RunDirs, arm: ArmRecord, key: RunKey) -> Path:
    """The run behind a cell: a best-of arm's chosen candidate's, or before the choice the
    last of its candidates' runs that has started (they start in candidate order)."""
    if not arm.best_of:
        return dirs(key)
    chosen = chosen_run(dirs, arm, key)
    if chosen is not None:
        return chosen
    candidates = candidate_runs(dirs, arm, key)
    started = [run_dir for run_dir in candidates if run_dir.is_dir()]
    return started[-1] if started else candidates[0]


def _cell(
    run_dir: Path,
    key: RunKey,
    grade: Grade | None,
    runs: StateCache,
    view_key: Callable[[Path], str],
) -> RunCell:
    resolved = grade.resolved if grade is not None else None
    if not run_dir.is_dir():
        return RunCell(key, "", "not started", resolved)
    try:
        status = runs.digest(run_dir).digest.status
    except LogError:
        return RunCell(key, "", "not started", resolved)
    return RunCell(key, view_key(run_dir), status, resolved)


def _count(arm: ArmProgress, cell: RunCell) -> None:
    if cell.status == "not started":
        return
    arm.started += 1
    if cell.status == "unfinished":
        arm.running += 1
    else:
        arm.finished += 1
    if cell.resolved is not None:
        arm.graded += 1
        arm.resolved += cell.resolved


class ReportCache:
    """An experiment's report (tables and figures), made again only when its grades change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Path, tuple[tuple[int, int], ExperimentReport, dict[str, str]]] = {}

    def get(self, root: Path) -> tuple[ExperimentReport, dict[str, str]]:
        """The report and its figures as inline SVG by key."""
        mark = file_mark(Layout(root).grades)
        with self._lock:
            held = self._held.get(root)
        if held is not None and held[0] == mark:
            return held[1], held[2]
        report = read_experiment(root)
        figures = _figures(report)
        with self._lock:
            self._held[root] = (mark, report, figures)
        return report, figures


def _figures(report: ExperimentReport) -> dict[str, str]:
    from swarmflow.experiments.figures import FIGURES

    return {key: draw(report.arms) for key, _caption, draw in FIGURES}


__all__ = [
    "ArmProgress",
    "ExperimentState",
    "ReportCache",
    "RunCell",
    "read_experiment_state",
]
