"""`grades.jsonl`: one line per graded run, written whole with one `write(2)` when it is graded.

A run with a line is never graded again, so a killed experiment re-run grades only what was
left. Reading back, a line that is not a grade (cut short by a kill, forged, of the wrong
types) is skipped with a warning, and its run is graded again; a second line for a run that
already has one is ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarmflow.experiments.layout import RunKey


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
    """Every grade in `path` (none when it is missing); bad lines are warned of, skipped."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    grades: dict[RunKey, Grade] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            grade = Grade.model_validate(json.loads(line))
        except (ValueError, ValidationError):
            warnings.append(f"{path}:{number}: not a grade; skipped, so its run is graded again")
            continue
        grades.setdefault(grade.key, grade)
    return grades


def append_grade(path: Path, grade: Grade) -> None:
    """Append the grade's line in one write (after a cut line, on a line of its own)."""
    data = grade.model_dump_json().encode("utf-8") + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size and not _ends_with_newline(path):
            data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
