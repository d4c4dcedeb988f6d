"""`grades.jsonl`: one line per graded run, written whole with one `write(2)` when it is graded
(the one line writer, `record.lines`).

A run with a line is never graded again, so a killed experiment re-run grades only what was
left. Reading back, a line that is not a grade (cut short by a kill, forged, of the wrong
types) is skipped with a warning, and its run is graded again; a second line for a run that
already has one is ignored.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarmflow.core import reading
from swarmflow.core.secrets import environment_redactor
from swarmflow.experiments.layout import RunKey
from swarmflow.record.lines import LineWriter, cut_torn_tail


class Grade(BaseModel):
    """How one run was graded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arm: str
    task: str
    repeat: int = Field(ge=1)
    resolved: bool
    score: float = Field(ge=0, le=1)
    """1 or 0 for `tests`; the function's score; the share of rubric items passed."""
    rubric_passed: int = Field(0, ge=0)
    rubric_items: int = Field(0, ge=0)
    judge_tokens: int = Field(0, ge=0)
    judge_cost: float = Field(0.0, ge=0)
    sandboxed: bool = False
    note: str = ""
    tests_edited: bool = False
    """The product changed the task's test files; the changes were discarded before grading."""
    grade_error: str = ""
    """Why the run could not be graded (a product that does not apply), else ''."""
    grader: str = ""
    """Which grader gave the grade (`grading.grader_identity`)."""

    @property
    def key(self) -> RunKey:
        return RunKey(self.arm, self.task, self.repeat)


def read_grades(path: Path, warnings: list[str]) -> dict[RunKey, Grade]:
    """Every grade in `path` (none when it is missing), read by the one reader (a regular
    file, bounded lines, bounded nesting; a torn last line is not read); bad lines are
    warned of, skipped."""
    grades: dict[RunKey, Grade] = {}

    def torn(number: int) -> None:
        warnings.append(
            f"{path}:{number}: not a grade; skipped (cut off mid-write), so its run is graded again"
        )

    if not path.exists():
        return grades
    for number, line in reading.lines(path, "a grades file", torn=torn):
        try:
            grade = Grade.model_validate(reading.json_value(line))
        except (ValueError, ValidationError):
            warnings.append(f"{path}:{number}: not a grade; skipped, so its run is graded again")
            continue
        grades.setdefault(grade.key, grade)
    return grades


def append_grade(path: Path, grade: Grade) -> None:
    """Append the grade's line with the one line writer (`record.lines`: a torn last line
    cut off first, one `write(2)`, synced), its text through the redactor."""
    if path.exists():
        cut_torn_tail(path)
    writer = LineWriter(path, fsync=True, scrub=environment_redactor().scrub_bytes)
    try:
        writer.hold(grade.model_dump_json().encode("utf-8"))
    finally:
        writer.close()
