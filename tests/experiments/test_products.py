"""Products that apply and a grader that cannot be gamed (docs/experiments.md, "What you
can rely on").

An oracle coder types the canonical solution (a text fix and a binary file), runs pytest in
its workspace, which leaves `__pycache__/` and `.pytest_cache/` behind in a repository that
ignores nothing, and submits: it scores 100% in every arm, whatever its workspace. A product
that edits the task's tests is graded with the tests as the base had them.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.cli import main
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.core.patch import Patch
from swarmflow.experiments import Arm, Experiment, TestsGrader, read_experiment, run_experiment
from swarmflow.testing import FunctionModel, tool_call
from tests.experiments.conftest import FIXED, TESTS, diff_for, git, write_tasks

TABLE = bytes([0, 255, 1, 254, 10, 0])
TABLE_TEST = (
    "\n\ndef test_table():\n    from pathlib import Path\n\n"
    f"    assert (Path(__file__).parents[1] / 'pkg/table.bin').read_bytes() == {TABLE!r}\n"
)
PYTEST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q"
SHELL_WRITES_TABLE = "printf '" + "".join(f"\\{b:03o}" for b in TABLE) + "' > pkg/table.bin"


def _repo(path: Path) -> Path:
    """A repository that ignores nothing (no .gitignore): the tests leave debris behind."""
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "pkg/__init__.py": "",
        "pkg/calc.py": "def double(x):\n    return x + 2\n",
        "tests/test_calc.py": TESTS + TABLE_TEST,
    }
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path


CODE = ("edit", "run_shell", "submit")


def _coder(name: str, workspace: str) -> Agent:
    return Agent(name, tools=CODE, workspace=workspace, max_steps=8)


@flow(team=Team([_coder("coder", "worktree")]))
async def single(issue: str) -> Patch | None:
    """One Coder in a worktree; its product is its patch."""
    return (await agent("coder", issue)).patch


@flow(team=Team([_coder("coder", "local")]))
async def single_local(issue: str) -> str:
    """One Coder in the run's checkout; its product is the checkout as it leaves it."""
    return (await agent("coder", issue)).text


@flow(team=Team([_coder("coder_a", "worktree"), _coder("coder_b", "worktree")]))
async def duo(issue: str) -> Patch | None:
    """Two Coders one after the other, each in its own worktree; code picks the patch."""
    first = await agent("coder_a", issue)
    second = await agent("coder_b", issue)
    return first.patch or second.patch


def _oracle() -> FunctionModel:
    """Types the canonical solution, runs the tests, submits."""

    def step(request: ModelRequest) -> str | ToolCall:
        done = [c.name for m in request.messages if m.role == "assistant" for c in m.tool_calls]
        if "edit" not in done:
            return tool_call("edit", path="pkg/calc.py", old="x + 2", new="x * 2")
        if "run_shell" not in done:
            return tool_call("run_shell", command=f"{SHELL_WRITES_TABLE} && {PYTEST}")
        return tool_call("submit", summary="fixed; the tests pass")

    return FunctionModel(step, name="oracle")


def test_the_oracle_scores_100_in_every_arm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    repo = _repo(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{
        "id": "double", "inputs": {"issue": "double() adds 2; pkg/table.bin is missing"},
        "repo": str(repo), "test": PYTEST,
    }])  # fmt: skip
    arms = [
        Arm(name="single", flow=single, demo=_oracle, reference=True),
        Arm(name="single-local", flow=single_local, demo=_oracle),
        Arm(name="workflow", flow=duo, demo=_oracle),
    ]
    experiment = Experiment(name="oracle", arms=arms, tasks=tasks, grader=TestsGrader(seconds=60))
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    grades = {g["arm"]: g for g in map(json.loads, (out / "grades.jsonl").read_text().splitlines())}
    resolved = {a: g["resolved"] for a, g in grades.items()}
    assert resolved == {"single": True, "single-local": True, "workflow": True}, grades
    assert [g["grade_error"] for g in grades.values()] == ["", "", ""]
    # The coders' tests really left debris in their workspaces, and it was left out.
    assert list((out / "checkouts/single-local/double/r1").glob("**/__pycache__/*.pyc"))
    assert "build-debris file(s) left out" in grades["single-local"]["note"]
    report = read_experiment(out)
    assert [a.passed.value for a in report.arms] == [1.0, 1.0, 1.0]


def test_a_worktree_patch_carries_no_debris_and_its_binary_change_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    repo = _repo(tmp_path / "repo")
    result = run_sync(single, issue="fix it", model=_oracle(), runs_root=tmp_path / "runs",
                      repo=str(repo))  # fmt: skip
    patch = result.output
    assert isinstance(patch, Patch)
    assert "pkg/table.bin" in patch.files and "GIT binary patch" in patch.diff
    assert not [f for f in patch.files if "__pycache__" in f or ".pytest_cache" in f]
    (tmp_path / "p.diff").write_text(patch.diff)
    git(repo, "apply", "--check", str(tmp_path / "p.diff"))


def test_a_product_that_does_not_apply_is_a_grade_error_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "double", "repo": str(repo), "test": PYTEST},
    ])  # fmt: skip
    garbage = "--- a/nowhere\n+++ b/nowhere\n@@ -1 +1 @@\n-x\n+y\n"
    arms = [Arm(name="garbage", flow=hand_in, inputs={"patch": garbage}, reference=True)]
    experiment = Experiment(name="bad", arms=arms, tasks=tasks, grader=TestsGrader(seconds=60))
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, model="unused"))
    row = next(csv.DictReader((out / "rows.csv").read_text().splitlines()))
    assert "does not apply" in row["grade_error"] and row["resolved"] == "False"
    capsys.readouterr()
    assert main(["experiment", "report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "grade error: garbage/double/r1: the product does not apply" in text


@flow
async def hand_in(patch: str) -> dict[str, str]:
    """Returns the patch it is given, as a run's `Patch` output is recorded."""
    return {"diff": patch, "base": ""}


PASSING = TESTS.replace("assert double(2) == 4", "pass")
SKIP_ALL = "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n"


def _gaming(repo: Path) -> dict[str, str]:
    """Products that make the tests pass without fixing the code."""
    rewrite = diff_for_file(repo, "tests/test_calc.py", PASSING)
    (repo / "conftest.py").write_text(SKIP_ALL)
    git(repo, "add", "-N", "conftest.py")
    try:
        skip_all = git(repo, "diff")
    finally:
        git(repo, "rm", "-q", "--cached", "conftest.py")
        (repo / "conftest.py").unlink()
    return {"rewrite-test": rewrite, "conftest-skips": skip_all,
            "fixes": diff_for(repo, FIXED)}  # fmt: skip


def diff_for_file(repo: Path, name: str, text: str) -> str:
    before = (repo / name).read_text()
    (repo / name).write_text(text)
    try:
        return git(repo, "diff")
    finally:
        (repo / name).write_text(before)


def test_a_product_that_edits_the_tests_is_graded_by_the_base_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _plain_repo(repo)
    task = {"id": "double", "repo": str(repo), "test": PYTEST,
            "FAIL_TO_PASS": ["tests/test_calc.py::test_two"]}  # fmt: skip
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task])
    patches = _gaming(repo)
    arms = [Arm(name=name, flow=hand_in, inputs={"patch": p}, reference=name == "fixes")
            for name, p in patches.items()]  # fmt: skip
    out = tmp_path / "out"
    experiment = Experiment(name="gaming", arms=arms, tasks=tasks, grader=TestsGrader(seconds=60))
    anyio.run(lambda: run_experiment(experiment, out=out, model="unused"))
    rows = {r["arm"]: r for r in csv.DictReader((out / "rows.csv").read_text().splitlines())}
    resolved = {a: r["resolved"] for a, r in rows.items()}
    assert resolved == {"rewrite-test": "False", "conftest-skips": "False", "fixes": "True"}
    assert {a: (r["resolved"], r["tests_edited"]) for a, r in rows.items()} == {
        "rewrite-test": ("False", "True"), "conftest-skips": ("False", "True"),
        "fixes": ("True", "False"),
    }  # fmt: skip
    capsys.readouterr()
    assert main(["experiment", "report", str(out)]) == 0
    assert "tests edited (restored from the base before grading): rewrite-test 1" in (
        capsys.readouterr().out
    )
    # Turned off (editing the tests is the job): the edited tests are the ones that run.
    off = tmp_path / "off"
    relaxed = experiment.model_copy(update={"grader": TestsGrader(seconds=60, restore_tests=False)})
    anyio.run(lambda: run_experiment(relaxed, out=off, model="unused"))
    rows = {r["arm"]: r for r in csv.DictReader((off / "rows.csv").read_text().splitlines())}
    assert rows["rewrite-test"]["resolved"] == "True"
    assert rows["rewrite-test"]["tests_edited"] == "False"


def _plain_repo(path: Path) -> None:
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "pkg/__init__.py": "",
        "pkg/calc.py": "def double(x):\n    return x + x if x > 2 else x + 1\n",
        "tests/test_calc.py": TESTS,
    }
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")


def _product(repo: Path, change: str) -> str:
    """The diff a shell `change` makes in `repo` (new files included); `repo` is put back."""
    import subprocess

    subprocess.run(["sh", "-c", change], cwd=repo, check=True)
    git(repo, "add", "-A", "--force")  # as a clone would, which has no .git/info/exclude
    try:
        return git(repo, "diff", "--cached", "--binary", "HEAD")
    finally:
        git(repo, "reset", "-q", "--hard")
        git(repo, "clean", "-q", "-fdx")


def test_what_a_product_cannot_smuggle_past_the_grader(tmp_path: Path) -> None:
    from swarmflow.experiments.products import ProductRules, apply_product
    from swarmflow.experiments.task_tests import tests_among
    from swarmflow.experiments.tasks import ExperimentTask

    repo = _repo(tmp_path / "repo")
    (repo / ".git/info/exclude").write_text("build-output/\n")
    diff = _product(repo, (
        "git mv tests/test_calc.py pkg/moved.py && mkdir -p 'pkg/__pycache__' build-output && "
        "printf '\\000\\001' > 'pkg/__pycache__/[x]*.pyc' && echo 1 > build-output/a.txt && "
        "echo made > 'extra-*.log' && sed -i 's/x + 2/x * 2/' pkg/calc.py"
    ))  # fmt: skip
    task = ExperimentTask(id="t", repo=str(repo), test="true", debris=("extra-*.log",))
    rules = ProductRules(task.debris, lambda paths: tests_among(task, paths))
    where = tmp_path / "graded"
    applied = anyio.run(apply_product, repo, "HEAD", diff, where, rules)
    assert applied.problem is None
    assert applied.tests_edited == ("tests/test_calc.py",)
    assert set(applied.left_out) == {"pkg/__pycache__/[x]*.pyc", "build-output/a.txt",
                                     "extra-*.log"}  # fmt: skip
    # The test file is where the base had it, as the base had it; the fix itself applied.
    assert (where / "tests/test_calc.py").read_text() == TESTS + TABLE_TEST
    assert not (where / "build-output").exists() and not (where / "extra-*.log").exists()
    assert (where / "pkg/calc.py").read_text() == "def double(x):\n    return x * 2\n"


def test_which_files_hold_a_tasks_tests() -> None:
    from swarmflow.experiments.task_tests import restores_tests, tests_among
    from swarmflow.experiments.tasks import ExperimentTask

    changed = ["src/app.py", "tests/test_a.py", "conftest.py", "spec/checks.txt", "a_test.py"]
    listed = ExperimentTask(id="t", FAIL_TO_PASS=["spec/checks.txt::one"])
    assert tests_among(listed, changed) == changed[1:]
    own = ExperimentTask(id="t", test_files=["spec/checks.txt"])
    assert tests_among(own, changed) == ["spec/checks.txt"]
    editing = ExperimentTask(id="t", restore_tests=False)
    assert not restores_tests(TestsGrader(), editing)
    assert not restores_tests(TestsGrader(restore_tests=False), listed)
    assert restores_tests(TestsGrader(), listed)
