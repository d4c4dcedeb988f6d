"""Every finished run as one row: built from its run directory and its grade, and written to
`OUT/rows.csv` (stdlib `csv`; `pandas.read_csv("OUT/rows.csv")` or DuckDB's
`SELECT * FROM 'OUT/rows.csv'` read it in one line).

A run has a row once it has a grade (it is graded once it has finished). The rows are derived,
keyed by arm, task and repeat, and the file is replaced whole: a re-run of a killed experiment
can neither lose nor double one.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from swarmflow.core.secrets import environment_redactor
from swarmflow.experiments.bestof import candidate_runs, chosen_run, with_all_spend
from swarmflow.experiments.grades import Grade, read_grades
from swarmflow.experiments.layout import ArmRecord, Layout, Manifest, RunDirs, read_manifest
from swarmflow.experiments.runread import AXES, AssignedAxes, RunFacts, read_run
from swarmflow.report.log import LogError
from swarmflow.report.text import model_label


@dataclass
class Row:
    """One run, as the report and the CSV file see it."""

    arm: str
    task: str
    repeat: int
    resolved: bool
    score: float
    rubric_passed: int
    rubric_items: int
    adherent: bool
    unverified: bool
    participation: bool | None
    delegation: bool | None
    role_boundary: bool | None
    budget_sharing: bool | None
    information_flow: bool | None
    context_policy: bool | None
    tokens: int
    """Every token the run paid: each settled model call once, in whichever process."""
    tokens_replayed: int
    """Tokens of model calls a resume replayed from the journal at 0 (paid before, not again)."""
    tokens_repaid: int
    """Of `tokens`, those of calls sent again because their process died while they were in
    flight (their first payment went unrecorded)."""
    tokens_in: int
    tokens_out: int
    cached_tokens: int
    cost: float
    calls: int
    wall: float
    model_seconds: float
    tool_seconds: float
    engine_seconds: float
    end_reason: str
    status: str
    model: str
    allowance: int | None
    wall_limit: float | None
    judge_tokens: int
    judge_cost: float
    tokens_by_agent: dict[str, int]
    model_seconds_by_agent: dict[str, float]
    tool_seconds_by_agent: dict[str, float]
    run_dir: str
    tests_edited: bool = False
    """The product changed the task's tests; they were restored from the base to grade it."""
    grade_error: str = ""
    """Why the run could not be graded (its product does not apply), else ''."""
    output_modes: str = ""
    """The forms the run's model calls asked of their servers ("json_schema", "json_object",
    "prompt", joined with "+"; empty when none did): the protocol it was measured on."""
    factors: dict[str, bool] = field(default_factory=dict)
    """Factor -> whether the run shows it (the arm's factors only)."""
    shares: dict[str, list[float]] = field(default_factory=dict)
    """Each agent's share of the tokens per tenth of the run (the figure; not in the CSV)."""


CSV_FIELDS = tuple(f.name for f in fields(Row) if f.name != "shares")


def assigned_of(arm: ArmRecord) -> AssignedAxes:
    return AssignedAxes(arm.delegation, arm.tools, arm.context, arm.factors or None)


def collect(root: Path, warnings: list[str]) -> tuple[Manifest, list[Row]]:
    """The experiment's record and a row for every graded run, in declaration order."""
    layout = Layout(root)
    manifest = read_manifest(root)
    grades = read_grades(layout.grades, warnings)
    dirs = RunDirs.of(layout, manifest)
    rows: list[Row] = []
    for arm, _, key in manifest.runs():
        grade = grades.get(key)
        if grade is None:
            continue
        run_dir = dirs(key)
        if arm.best_of:  # the chosen candidate's run (`bestof`)
            run_dir = chosen_run(dirs, arm, key) or run_dir
        try:
            facts = read_run(run_dir, assigned_of(arm))
            row = row_of(grade, facts, run_dir)
            if arm.best_of:
                candidates = candidate_runs(dirs, arm, key)
                row = with_all_spend(row, candidates, lambda d: read_run(d, AssignedAxes()))
        except LogError as exc:
            warnings.append(f"{key.text}: graded, but its run cannot be read: {exc}")
            continue
        if facts.note:
            warnings.append(f"{key.text}: {facts.note}")
        rows.append(row)
    return manifest, rows


def row_of(grade: Grade, facts: RunFacts, run_dir: Path) -> Row:
    d = facts.digest
    total = d.total()
    axes = {a.replace(" ", "_"): facts.axis_ok(a) for a in AXES}
    return Row(
        arm=grade.arm,
        task=grade.task,
        repeat=grade.repeat,
        resolved=grade.resolved,
        score=grade.score,
        rubric_passed=grade.rubric_passed,
        rubric_items=grade.rubric_items,
        adherent=facts.adherent,
        unverified=facts.unverified,
        **axes,
        tokens=total.tokens_in + total.tokens_out,
        tokens_in=total.tokens_in,
        tokens_replayed=d.tokens_by_payment.get("replayed", 0),
        tokens_repaid=d.tokens_by_payment.get("repaid", 0),
        tokens_out=total.tokens_out,
        cached_tokens=total.tokens_cached,
        cost=total.cost,
        calls=total.calls,
        wall=d.seconds,
        model_seconds=sum(facts.timing.model.values()),
        tool_seconds=sum(facts.timing.tool.values()),
        engine_seconds=facts.engine_seconds,
        end_reason=facts.end_reason,
        status=d.status,
        model=model_label(s.model for s in d.sessions.values()),
        allowance=facts.allowance,
        wall_limit=facts.seconds_limit,
        judge_tokens=grade.judge_tokens,
        judge_cost=grade.judge_cost,
        tokens_by_agent={a: s.tokens_in + s.tokens_out for a, s in d.by_agent().items()},
        model_seconds_by_agent=dict(facts.timing.model),
        tool_seconds_by_agent=dict(facts.timing.tool),
        run_dir=str(run_dir),
        tests_edited=grade.tests_edited,
        grade_error=grade.grade_error,
        output_modes=facts.output_modes,
        factors=dict(facts.factors),
        shares=facts.shares,
    )


def write_rows(layout: Layout, warnings: list[str]) -> int:
    """Write `rows.csv` whole (replacing it in one rename); the number of rows."""
    _, rows = collect(layout.root, warnings)
    temporary = layout.rows.with_suffix(f".{os.getpid()}.tmp")
    with temporary.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        scrub = environment_redactor().scrub  # a sink like the event log: the one redactor
        for row in rows:
            values = _csv_values(row).items()
            writer.writerow({k: scrub(v) if isinstance(v, str) else v for k, v in values})
    temporary.replace(layout.rows)
    return len(rows)


def _csv_values(row: Row) -> dict[str, object]:
    values = asdict(row)
    values.pop("shares")
    for name, value in values.items():
        if isinstance(value, dict):
            values[name] = json.dumps(value, sort_keys=True)
        elif value is None:
            values[name] = ""
    return values
