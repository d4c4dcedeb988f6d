"""An experiment directory read back: its rows, its per-arm summaries, its report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from swarmflow.experiments.grades import read_grades
from swarmflow.experiments.grading_notes import Grading, read_grading
from swarmflow.experiments.layout import Layout, Manifest
from swarmflow.experiments.rows import Row, collect
from swarmflow.experiments.seedtables import render_seed_tables, seed_json
from swarmflow.experiments.summary import ArmSummary, summarize
from swarmflow.experiments.text import render_text, report_json


@dataclass
class ExperimentReport:
    """What `swarmflow experiment report DIR` shows, read from the run directories and grades."""

    root: Path
    manifest: Manifest
    rows: list[Row]
    arms: list[ArmSummary]
    warnings: list[str] = field(default_factory=list)
    grading: Grading = field(default_factory=Grading)
    """Which graders gave the grades, and whether they ran outside the sandbox."""

    def text(self) -> str:
        seeds = render_seed_tables(self.manifest, self.arms)
        return render_text(self.manifest, self.arms, self.warnings, self.grading, extra=seeds)

    def json(self) -> dict[str, object]:
        found = report_json(self.manifest, self.arms, self.warnings, self.grading)
        return {**found, "seeds": seed_json(self.manifest, self.arms)}

    def html(self) -> str:
        from swarmflow.experiments.html import render_html
        from swarmflow.experiments.seedtables import seed_figures

        extra = seed_figures(self.manifest, self.arms)
        return render_html(self.manifest.name, self.text(), self.arms, extra)


def read_experiment(root: str | Path) -> ExperimentReport:
    """The report of the experiment in `root`; `ConfigError` (one line) when it holds none."""
    path = Path(root).resolve()
    warnings: list[str] = []
    manifest, rows = collect(path, warnings)
    grades = list(read_grades(Layout(path).grades, []).values())
    grading = read_grading(path, grades, warnings)
    return ExperimentReport(path, manifest, rows, summarize(manifest, rows), warnings, grading)
