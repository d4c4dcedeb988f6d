"""The bundled task sets of the seeds' examples, each written into the folder it is given.

Every suite is a few tiny git repositories and a `tasks.jsonl` over them, made fresh in the
experiment's `OUT/suite/` (an `Experiment(tasks=function)`), so a fresh clone runs offline:

- `qa_suite`: one repository (`tinyq`, a retry queue) and four questions about it, each with
  rubric items and a `category:` tag (AgentRadio's repository questions);
- `interface_suite`: two small packages whose task changes a shared interface (a base class)
  and every module that implements it, graded by a count of tests (STORM's repositories);
- `coding_suite`: bugs and features in one small package, tagged by category and duration
  (openJiuwen's task categories).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

GIT = ["git", "-c", "user.name=seed", "-c", "user.email=seed@example.invalid",
       "-c", "commit.gpgsign=false"]  # fmt: skip


def _repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` holding `files`, committed once (made again if present)."""
    if (root / ".git").is_dir():
        return root
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    return root


def _tasks(folder: Path, tasks: list[dict[str, object]]) -> Path:
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return path


# -- AgentRadio: questions about one repository, graded by rubrics ---------------------------

TINYQ = {
    "README.md": "# tinyq\n\ntinyq is a retry queue with exponential backoff, MIT licensed.\n",
    "queue_lib/retry.py": '"""Retries."""\nclass RetryQueue:  # backoff doubles after every '
    "failure\n    def __init__(self):\n        self.delay = 1\n",
    "queue_lib/store.py": '"""Storage."""\ndef save_snapshot(queue, path):  # JSON, written '
    "atomically\n    return path\n",
    "tests/test_retry.py": "def test_backoff_doubles():\n    assert True\n",
}
QUESTIONS = [
    ("overview", "What is this project, and under which license?", ["tinyq named", "MIT named"],
     "overview"),
    ("retry", "How does a retry wait between attempts?", ["backoff named", "RetryQueue named"],
     "architecture"),
    ("store", "How is a queue saved to disk?", ["save_snapshot named", "JSON named"],
     "architecture"),
    ("tests", "Which test covers the backoff?", ["test_backoff_doubles named",
                                                 "RetryQueue named"], "testing"),
]  # fmt: skip


def qa_suite(folder: Path) -> Path:
    repo = _repo(folder / "tinyq", TINYQ)
    return _tasks(folder, [
        {"id": qid, "inputs": {"question": text}, "repo": str(repo), "rubric": rubric,
         "tags": [f"category:{category}"]}
        for qid, text, rubric, category in QUESTIONS
    ])  # fmt: skip


# -- STORM: a shared interface and the modules implementing it ----------------------------------

PACKAGES = {
    # package: (the base class, the method to add, implementer -> (its body, value at size 2))
    "shapes": ("Shape", "perimeter", {"circle": ("return 6 * self.size", 12),
                                      "square": ("return 4 * self.size", 8),
                                      "triangle": ("return 3 * self.size", 6),
                                      "hexagon": ("return 6 * self.size", 12)}),
    "units": ("Unit", "symbol", {"metre": ("return 'm'", "m"), "second": ("return 's'", "s"),
                                 "gram": ("return 'g'", "g"), "kelvin": ("return 'K'", "K")}),
}  # fmt: skip


def _package_files(package: str) -> dict[str, str]:
    base, method, impls = PACKAGES[package]
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
        ".gitignore": "__pycache__/\n",
        f"{package}/__init__.py": "",
        f"{package}/base.py": f"class {base}:\n    def __init__(self, size=1):\n"
        "        self.size = size\n",
    }
    for name, (_, expected) in impls.items():
        cls = name.capitalize()
        files[f"{package}/{name}.py"] = (
            f"from {package}.base import {base}\n\n\nclass {cls}({base}):\n    pass\n"
        )
        files[f"tests/test_{name}.py"] = (
            f"from {package}.{name} import {cls}\nfrom {package}.base import {base}\n\n\n"
            f"def test_{name}_{method}():\n    assert {cls}(2).{method}() == {expected!r}\n\n\n"
            f"def test_{name}_is_a_{base.lower()}():\n"
            f"    assert hasattr({base}, {method!r}) and isinstance({cls}(), {base})\n"
        )
    return files


def interface_suite(folder: Path) -> Path:
    tasks = []
    for package, (base, method, impls) in PACKAGES.items():
        repo = _repo(folder / package, _package_files(package))
        tasks.append({
            "id": f"{package}-{method}",
            "inputs": {"issue": f"Add `{method}()` to the `{base}` interface in "
                                f"{package}/base.py and implement it in every module of "
                                f"{package}/ as specified: "
                                + "; ".join(f"{package}/{n}.py: {body}"
                                            for n, (body, _) in impls.items())},
            "repo": str(repo), "data": {"tests": 2 * len(impls), "package": package,
                                        "method": method, "base": base,
                                        "bodies": {n: b for n, (b, _) in impls.items()}},
            "tags": [f"repo:{package}"],
        })  # fmt: skip
    return _tasks(folder, tasks)


# -- openJiuwen: one package, tasks by category and duration ------------------------------------

CALC = {
    "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
    ".gitignore": "__pycache__/\n",
    "calc/__init__.py": "",
    "calc/stats.py": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\n"
    "def spread(xs):\n    return max(xs) - max(xs)\n",
    "calc/text.py": "def shout(s):\n    return s.lower()\n",
    "tests/test_stats.py": "from calc.stats import mean, spread\n\n\ndef test_mean():\n"
    "    assert mean([1, 2, 3]) == 2\n\n\ndef test_spread():\n    assert spread([1, 4]) == 3\n",
    "tests/test_text.py": "from calc.text import shout\n\n\ndef test_shout():\n"
    "    assert shout('hi') == 'HI'\n",
    "data/project.log": "".join(
        f"{i:05d} INFO calc: request {i} served in {i % 97} ms by worker {i % 7}\n"
        for i in range(600)
    ),
}
CODING = [
    # id, issue, file, old, new, category, duration
    ("mean", "mean() divides by one too many", "calc/stats.py", "(len(xs) + 1)", "len(xs)",
     "bugfix", "short"),
    ("spread", "spread() subtracts the maximum from itself", "calc/stats.py",
     "max(xs) - max(xs)", "max(xs) - min(xs)", "bugfix", "short"),
    ("shout", "shout() must upper-case its text", "calc/text.py", "s.lower()", "s.upper()",
     "feature", "long"),
]  # fmt: skip


def coding_suite(folder: Path) -> Path:
    repo = _repo(folder / "calc", CALC)
    return _tasks(folder, [
        {"id": tid, "inputs": {"issue": f"{issue} (in {path})"}, "repo": str(repo),
         "data": {"tests": 1, "select": [_test_of(tid)], "file": path, "old": old, "new": new},
         "tags": [f"category:{category}", f"duration:{duration}"]}
        for tid, issue, path, old, new, category, duration in CODING
    ])  # fmt: skip


def _test_of(task: str) -> str:
    return {"mean": "tests/test_stats.py::test_mean", "spread": "tests/test_stats.py::test_spread",
            "shout": "tests/test_text.py::test_shout"}[task]  # fmt: skip
