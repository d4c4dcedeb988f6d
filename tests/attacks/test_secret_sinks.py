"""Every sink that persists or prints passes the one redactor: a grade's note, and whatever a
command prints, hold `[redacted]` where the environment's secret was."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.cli import scrubbed_output
from swarmflow.experiments.grades import Grade, append_grade, read_grades

SECRET = "ghp_0123456789abcdefSECRET"


def test_a_grade_whose_note_echoes_a_secret_is_stored_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN", SECRET)
    path = tmp_path / "grades.jsonl"
    grade = Grade(arm="a", task="t", repeat=1, resolved=False, score=0.0,
                  note=f"tests failed: remote rejected token {SECRET}")  # fmt: skip
    append_grade(path, grade)
    assert SECRET not in path.read_text()
    (stored,) = read_grades(path, []).values()
    assert stored.note == "tests failed: remote rejected token [redacted]"


def test_what_a_command_prints_passes_the_redactor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setenv("GH_TOKEN", SECRET)
    with scrubbed_output():
        print(f"the token is {SECRET}")
        print(f"and again {SECRET}", file=sys.stderr)
    out, err = capsys.readouterr()
    assert out == "the token is [redacted]\n" and err == "and again [redacted]\n"
