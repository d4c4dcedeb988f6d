"""Every file swarmflow reads back goes through the one reader: a FIFO is refused at once, a
line nested 100,000 deep is one line naming the file and the line, a large event written by
the run is read back, and a huge `.swarm` file gets the parser's own located error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from swarmflow import flow, run
from swarmflow.core.outcomes import Failed
from swarmflow.dsl.syntax.grammar import MAX_SOURCE_CHARS
from swarmflow.experiments.grades import read_grades
from swarmflow.operators.compact import compact
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel
from tests.observe.test_report_bad_logs import a_run

PROMPTLY = 120
"""Seconds a command may take to refuse a bad file: far more than it needs; a hang fails it."""
DEEP = b"[" * 100_000 + b"]" * 100_000


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command line in its own process, bounded: a command that blocks fails the test."""
    return subprocess.run([sys.executable, "-m", "swarmflow.cli", *args], capture_output=True,
                          text=True, timeout=PROMPTLY, check=False, cwd=cwd)  # fmt: skip


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def _finished_run(tmp_path: Path) -> Path:
    os.chdir(tmp_path)  # the run directory lands in ./runs
    result = anyio.run(a_run)
    assert result.run_dir is not None
    return Path(result.run_dir)


@pytest.mark.parametrize("command", ["runs", "resume"])
def test_a_deeply_nested_event_line_is_one_line_for_runs_and_resume(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = _finished_run(tmp_path)
    lines = (run_dir / EVENTS_FILE).read_bytes().count(b"\n")
    with (run_dir / EVENTS_FILE).open("ab") as fh:
        fh.write(DEEP + b"\n")
    target = str(run_dir.parent) if command == "runs" else str(run_dir)
    said = one_line(cli(command, target))
    assert f"{EVENTS_FILE}:{lines + 1}: not an event: nested deeper than" in said


@flow
async def compacts(count: int) -> int:
    """A real `compact()` over `count` failed outcomes, each with a 250-character error."""
    failures = [Failed(error=RuntimeError("x" * 250), index=i) for i in range(count)]
    return len(compact(failures))


def test_a_run_with_a_twenty_mebibyte_event_reports_as_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real `compact()` over 80,000 outcomes writes one event of about 20 MiB: every reader
    reads it, and the report calls the run ok."""
    monkeypatch.chdir(tmp_path)
    result = anyio.run(lambda: run(compacts, count=80_000, model=FunctionModel(lambda r: "ok")))
    assert result.status == "ok" and result.run_dir is not None
    run_dir = Path(result.run_dir)
    path = run_dir / EVENTS_FILE
    assert max(map(len, path.read_bytes().splitlines())) > 20 << 20
    done = cli("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert "unfinished" not in done.stdout and "truncated" not in done.stdout
    assert "Traceback" not in cli("runs", str(run_dir.parent)).stderr


@pytest.mark.parametrize("bad", ["fifo", "nested"])
def test_experiment_report_refuses_a_fifo_or_a_nested_record_in_one_line(
    tmp_path: Path, bad: str
) -> None:
    record = tmp_path / "experiment.json"
    if bad == "fifo":
        os.mkfifo(record)
    else:
        record.write_bytes(DEEP)
    said = one_line(cli("experiment", "report", str(tmp_path)))
    assert "experiment.json" in said
    assert ("not a FIFO" in said) if bad == "fifo" else ("nested deeper than" in said)


def test_a_grades_file_that_is_a_fifo_or_nested_is_refused_or_skipped(tmp_path: Path) -> None:
    grades = tmp_path / "grades.jsonl"
    grades.write_bytes(DEEP + b"\n")
    warnings: list[str] = []
    assert read_grades(grades, warnings) == {}
    assert warnings == [f"{grades}:1: not a grade; skipped, so its run is graded again"]
    grades.unlink()
    os.mkfifo(grades)
    reading = f"from swarmflow.experiments.grades import read_grades; read_grades(__import__('pathlib').Path({str(grades)!r}), [])"
    done = subprocess.run([sys.executable, "-c", reading], capture_output=True, text=True,
                          timeout=PROMPTLY, check=False)  # fmt: skip
    assert "must be a regular file, not a FIFO" in done.stderr


@pytest.mark.parametrize("command", ["check", "graph"])
def test_a_swarm_file_over_sixteen_million_bytes_gets_the_located_error(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "huge.swarm"
    path.write_bytes(b"x" * 16_000_010)
    done = cli(command, str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    said = (done.stdout + done.stderr).splitlines()[0]
    assert said == (
        f"{path}:1:1: error: this file holds 16,000,010 bytes, more than the "
        f"{MAX_SOURCE_CHARS:,} characters a .swarm file may hold; split the flow, or move "
        "long text into files next to it"
    )


def test_runs_lists_the_good_runs_and_one_line_per_bad_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = _finished_run(tmp_path)
    nested, fifo = run_dir.parent / "a-nested", run_dir.parent / "b-fifo"
    nested.mkdir()
    (nested / EVENTS_FILE).write_bytes(DEEP + b"\n")
    fifo.mkdir()
    os.mkfifo(fifo / EVENTS_FILE)
    done = cli("runs", str(run_dir.parent))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    bad = done.stderr.splitlines()
    assert len(bad) == 2, done.stderr
    assert f"a-nested/{EVENTS_FILE}:1: not an event: nested deeper than" in bad[0]
    assert f"b-fifo/{EVENTS_FILE}" in bad[1] and "FIFO" in bad[1]
    listed = done.stdout.splitlines()
    assert len(listed) == 2 and listed[1].startswith(run_dir.name), done.stdout
