"""`swarmflow experiment grade OUT` grades a finished experiment again from its record, with
no model call; and grading outside the sandbox is said once, loudly, or refused."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmflow.cli import main
from swarmflow.tools.sandbox import bwrap_problem
from tests.experiments.conftest import FAST_PYTEST, write_tasks

DECLARATION = """
import os
from swarmflow import Agent, Team, agent, flow
from swarmflow.experiments import Arm, Experiment, FunctionGrader, TestsGrader
from swarmflow.testing import FunctionModel, tool_call

@flow(team=Team([Agent("coder", tools=("edit", "submit"), workspace="worktree")]))
async def coder(issue: str):
    return (await agent("coder", issue)).patch

def oracle():
    def step(request):
        if not any(m.tool_calls for m in request.messages if m.role == "assistant"):
            return tool_call("edit", path="pkg/calc.py", old=os.environ["OLD"], new="x * 2")
        return tool_call("submit", summary="fixed")
    return FunctionModel(step, name="oracle")

@flow
async def hand_in(issue: str):
    return {"diff": "", "base": ""}

EXPERIMENT = Experiment(
    name="regrade", tasks=os.environ["TASKS"], grader=TestsGrader(seconds=60),
    arms=[Arm(name="oracle", flow=coder, demo=oracle, reference=True),
          Arm(name="nothing", flow=hand_in, demo=oracle)],
)
LENIENT = FunctionGrader(fn=lambda task, result: True)
STRICT = EXPERIMENT.model_copy(update={"grader": TestsGrader(seconds=60, sandbox="bwrap")})
"""


@pytest.fixture
def declared(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{
        "id": "double", "inputs": {"issue": "double() is wrong"}, "repo": str(repo),
        "test": FAST_PYTEST, "FAIL_TO_PASS": ["tests/test_calc.py::test_two"],
    }])  # fmt: skip
    old = (repo / "pkg/calc.py").read_text().split("return ")[1].strip()
    monkeypatch.setenv("TASKS", str(tasks))
    monkeypatch.setenv("OLD", old)
    (tmp_path / "declared.py").write_text(DECLARATION)
    return str(tmp_path / "declared.py")


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """bubblewrap hidden from PATH (git kept), whether or not this machine has it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(bin_dir))
    bwrap_problem.cache_clear()
    yield
    bwrap_problem.cache_clear()


def _grades(out: Path, name: str = "grades.jsonl") -> list[dict[str, object]]:
    """The grades, in arm order (a run appends them as runs finish), with the seconds pytest
    took left out of their notes."""
    grades = [json.loads(line) for line in (out / name).read_text().splitlines()]
    for grade in grades:
        grade["note"] = re.sub(r" in [0-9.]+s\b", "", str(grade["note"]))
    return sorted(grades, key=lambda g: (str(g["arm"]) != "oracle", str(g["arm"])))


def _events(out: Path) -> list[dict[str, object]]:
    path = out / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _model_calls(out: Path) -> int:
    """Every model call recorded anywhere in the experiment's folder."""
    return sum(line.count('"type":"model_called"') for p in out.rglob("events.jsonl")
               for line in p.read_text().splitlines())  # fmt: skip


def _run_files(out: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in out.glob("arms/*/runs/*/*") if p.is_file()}


def test_grade_reproduces_the_grades_with_no_model_call(
    declared: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["experiment", "run", f"{declared}:EXPERIMENT", "--demo", "--out", str(out)]) == 0
    first = _grades(out)
    assert [(g["arm"], g["resolved"]) for g in first] == [("oracle", True), ("nothing", False)]
    runs, calls = _run_files(out), _model_calls(out)
    assert calls > 0
    capsys.readouterr()
    assert main(["experiment", "grade", str(out)]) == 0
    assert "2 runs graded by tests(seconds=60" in capsys.readouterr().out
    assert _model_calls(out) == calls and _run_files(out) == runs  # no arm ran, no model call
    again = _grades(out)
    assert again == first
    assert all(str(g["grader"]).startswith("tests(") for g in again)
    # Another grader, named by reference: the report says which graded.
    assert main(["experiment", "grade", str(out), "--grader", f"{declared}:LENIENT"]) == 0
    assert [g["resolved"] for g in _grades(out)] == [True, True]
    assert _grades(out, "grades.previous.jsonl") == first
    capsys.readouterr()
    assert main(["experiment", "report", str(out)]) == 0
    assert "graded by function(" in capsys.readouterr().out


def test_grading_outside_the_sandbox_is_said_once(
    declared: str, tmp_path: Path, no_bwrap: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["experiment", "run", f"{declared}:EXPERIMENT", "--demo", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("outside the sandbox") == 1, err
    assert "bubblewrap (bwrap) is not installed" in err
    (event,) = _events(out)
    assert event["type"] == "sandbox_unavailable" and "not installed" in str(event["reason"])
    assert main(["experiment", "report", str(out)]) == 0
    header = capsys.readouterr().out.split("\n\n")[0]
    assert "graded outside the sandbox: bubblewrap (bwrap) is not installed" in header
    assert all(g["sandboxed"] is False for g in _grades(out))


def test_require_sandbox_refuses_before_anything_is_paid(
    declared: str, tmp_path: Path, no_bwrap: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    capsys.readouterr()
    argv = ["experiment", "run", f"{declared}:EXPERIMENT", "--demo", "--out", str(out)]
    assert main([*argv, "--require-sandbox"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "must run in the sandbox" in err, err
    assert not (out / "arms").exists() and not (out / "checkouts").exists()
    # The declaration's own field refuses the same way.
    strict = ["experiment", "run", f"{declared}:STRICT", "--demo", "--out", str(out)]
    assert main(strict) == 2 and not (out / "arms").exists()
    assert "must run in the sandbox" in capsys.readouterr().err
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["experiment", "grade", str(out), "--require-sandbox"]) == 2
    assert "must run in the sandbox" in capsys.readouterr().err


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"needs bubblewrap: {bwrap_problem()}")
def test_with_bubblewrap_grading_is_sandboxed_and_says_nothing(
    declared: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    capsys.readouterr()
    argv = ["experiment", "run", f"{declared}:EXPERIMENT", "--demo", "--out", str(out)]
    assert main([*argv, "--require-sandbox"]) == 0
    assert "outside the sandbox" not in capsys.readouterr().err
    assert _events(out) == [] and all(g["sandboxed"] for g in _grades(out))


def test_a_fifo_where_the_experiments_event_log_should_be_is_one_line(
    declared: str, tmp_path: Path, no_bwrap: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "events.jsonl")  # the sandbox notice must not wait on it
    capsys.readouterr()
    code = main(["experiment", "run", f"{declared}:EXPERIMENT", "--demo", "--out", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert f"{out / 'events.jsonl'}: the experiment's event log must be a regular file" in err
