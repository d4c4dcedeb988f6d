"""Real-looking content for the context processors: pytest logs, unified diffs, JSON, tables."""

from __future__ import annotations

import json

FAILED_TESTS = [f"tests/test_mod{i}.py::test_case_{i * 7}" for i in range(0, 60, 8)]


def pytest_log(lines: int = 3_000) -> str:
    """A pytest run of `lines` lines: passes, a few failures with tracebacks, the summary."""
    out = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /work/repo",
        "collected 2900 items",
        "",
    ]
    failures: list[str] = [
        "",
        "=================================== FAILURES ===================================",
    ]
    for n, test in enumerate(FAILED_TESTS):
        name = test.split("::")[1]
        failures += [
            f"________________________________ {name} ________________________________",
            "",
            f"    def {name}():",
            f"        value = compute({n})",
            f">       assert value == {n + 1}",
            f"E       assert {n} == {n + 1}",
            f"E        +  where {n} = compute({n})",
            "",
            f"{test.split('::')[0]}:{10 + n}: AssertionError",
        ]
    summary = ["=========================== short test summary info ============================"]
    summary += [f"FAILED {t} - assert {i} == {i + 1}" for i, t in enumerate(FAILED_TESTS)]
    summary.append(
        f"================== {len(FAILED_TESTS)} failed, 2892 passed in 41.27s =================="
    )
    room = lines - len(out) - len(failures) - len(summary)
    i = 0
    while len(out) < 5 + room:
        out.append(
            f"tests/test_mod{i % 60}.py::test_case_{i} PASSED{' ' * 20}[{i * 100 // room:3d}%]"
        )
        i += 1
    return "\n".join(out + failures + summary)


def unified_diff(lines: int = 2_000) -> tuple[str, list[str]]:
    """A diff of about `lines` lines over several files, and every hunk header in it."""
    out: list[str] = []
    headers: list[str] = []
    file_no = 0
    while len(out) < lines:
        path = f"src/pkg/module_{file_no}.py"
        out += [f"diff --git a/{path} b/{path}", "index 3b18e51..a9c4f2d 100644",
                f"--- a/{path}", f"+++ b/{path}"]  # fmt: skip
        for hunk in range(6):
            start = 10 + hunk * 40
            header = f"@@ -{start},12 +{start},13 @@ def function_{hunk}(arg):"
            headers.append(header)
            out.append(header)
            out += [f"     context line {k} of hunk {hunk}" for k in range(4)]
            out += [f"-    old = compute({hunk}, {k})" for k in range(3)]
            out += [f"+    new = compute({hunk}, {k}, strict=True)" for k in range(4)]
            out += [f"     trailing context {k}" for k in range(5)]
        file_no += 1
    return "\n".join(out), headers


def big_json(items: int = 1_500) -> str:
    rows = [
        {"id": i, "name": f"item-{i}", "tags": ["a", "b", "c"] * 4, "note": "x" * 500}
        for i in range(items)
    ]
    return json.dumps({"count": items, "items": rows, "meta": {"source": "api", "page": 1}})


def markdown_table(rows: int = 400) -> str:
    lines = ["| file | lines | coverage |", "|---|---:|---:|"]
    lines += [f"| src/pkg/module_{i}.py | {100 + i} | {i % 100}% |" for i in range(rows)]
    return "\n".join(lines)
