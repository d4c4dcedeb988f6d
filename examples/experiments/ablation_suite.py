"""The bundled task suite: tiny generated Python repositories, each with one bug and a failing
test, written fresh (and committed) into the folder the experiment gives it.

Each bug comes with its fix and with a wrong fix that makes the failing test pass but breaks
another one; the scripted policies (`ablation_scripted.py`) read them from `BUGS`, which is
how a stand-in without a model "knows" what to type. A real model gets only the issue text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
"""This interpreter (which has pytest), without the plugins installed beside it."""


@dataclass(frozen=True)
class Bug:
    id: str
    module: str
    source: str
    """The module's text; `{line}` is where the buggy (or fixed) line goes."""
    buggy: str
    fixed: str
    broken: str
    """A wrong fix: the failing test passes, another one fails."""
    tests: dict[str, str]
    """Test name -> its body; the first fails on the buggy line."""
    issue: str

    @property
    def path(self) -> str:
        return f"pkg/{self.module}.py"


BUGS: tuple[Bug, ...] = (
    Bug("median", "stats",
        "def median(values):\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n{line}\n",
        "    return ordered[mid]",
        "    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2",
        "    return (ordered[mid - 1] + ordered[mid]) / 2",
        {"test_even": "assert median([4, 1, 3, 2]) == 2.5",
         "test_odd": "assert median([3, 1, 2]) == 2"},
        "median() of an even number of values should be the mean of the two middle ones."),
    Bug("clamp", "numbers",
        "def clamp(value, low, high):\n{line}\n",
        "    return max(low, min(value, low))",
        "    return max(low, min(value, high))",
        "    return min(value, high)",
        {"test_inside": "assert clamp(5, 0, 10) == 5",
         "test_below": "assert clamp(-3, 0, 10) == 0"},
        "clamp(5, 0, 10) should be 5: values inside the range must be kept."),
    Bug("slug", "text",
        "def slugify(text):\n{line}\n",
        '    return text.strip().lower().replace(" ", "_")',
        '    return text.strip().lower().replace(" ", "-")',
        '    return text.replace(" ", "-")',
        {"test_dashes": 'assert slugify("Hello World") == "hello-world"',
         "test_strip": 'assert slugify(" a ") == "a"'},
        "slugify() should join words with dashes, not underscores."),
    Bug("leap", "calendar",
        "def is_leap(year):\n{line}\n",
        "    return year % 4 == 0",
        "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        "    return year % 4 == 0 and year % 100 != 0",
        {"test_century": "assert not is_leap(1900)", "test_400": "assert is_leap(2000)"},
        "is_leap(1900) should be False: centuries are leap years only when divisible by 400."),
    Bug("words", "counting",
        "def word_count(text):\n{line}\n",
        '    return len(text.split(" "))',
        "    return len(text.split())",
        '    return len(text.split(" ")) - 1',
        {"test_spaces": 'assert word_count("a  b") == 2',
         "test_plain": 'assert word_count("a b c") == 3'},
        "word_count() should not count empty words between repeated spaces."),
    Bug("range", "sequences",
        "def upto(n):\n{line}\n",
        "    return list(range(1, n))",
        "    return list(range(1, n + 1))",
        "    return list(range(n + 1))",
        {"test_inclusive": "assert upto(3) == [1, 2, 3]", "test_zero": "assert upto(0) == []"},
        "upto(n) should include n itself."),
)  # fmt: skip

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "suite", "GIT_AUTHOR_EMAIL": "suite@example.invalid",
    "GIT_COMMITTER_NAME": "suite", "GIT_COMMITTER_EMAIL": "suite@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}  # fmt: skip


def bug(task_id: str) -> Bug:
    return next(b for b in BUGS if b.id == task_id)


def write_suite(folder: Path) -> Path:
    """Write every repository (once) and the task set; returns the task set's path."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for b in BUGS:
        repo = folder / "repos" / b.id
        if not (repo / ".git").exists():
            _make_repo(repo, b)
        failing, *passing = (f"tests/test_{b.module}.py::{name}" for name in b.tests)
        lines.append({
            "id": b.id, "inputs": {"task_id": b.id, "issue": f"{b.issue} (see {b.path})"},
            "repo": f"repos/{b.id}", "test": TEST_COMMAND,
            "FAIL_TO_PASS": [failing], "PASS_TO_PASS": passing,
        })  # fmt: skip
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return tasks


def _make_repo(repo: Path, b: Bug) -> None:
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n',
        ".gitignore": "__pycache__/\n*.pyc\n.pytest_cache/\n",
        "pkg/__init__.py": "",
        b.path: b.source.replace("{line}", b.buggy),
        f"tests/test_{b.module}.py": f"from pkg.{b.module} import *\n\n"
        + "".join(f"\ndef {name}():\n    {body}\n" for name, body in b.tests.items()),
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    env = {**os.environ, **_GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", b.id]):
        subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env,
                       check=True, capture_output=True)  # fmt: skip
