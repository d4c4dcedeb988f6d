"""Structure-aware reduction on real-looking content: what each kind keeps."""

from __future__ import annotations

import json

from swarmflow.context.structure import MARK, reduce_text
from tests.context.content import (
    FAILED_TESTS,
    big_json,
    markdown_table,
    pytest_log,
    unified_diff,
)


def test_a_3000_line_pytest_log_keeps_every_failure_and_the_summary() -> None:
    log = pytest_log(3_000)
    assert len(log.splitlines()) == 3_000
    reduced, kind = reduce_text(log)
    assert kind.startswith("log")
    assert len(reduced) < len(log) / 5
    for test in FAILED_TESTS:
        name = test.split("::")[1]
        assert f"FAILED {test}" in reduced  # the short summary, line by line
        assert f"_ {name} _" in reduced  # the failure's section header
    for n in range(len(FAILED_TESTS)):
        assert f"E       assert {n} == {n + 1}" in reduced
        assert f">       assert value == {n + 1}" in reduced
    assert f"{len(FAILED_TESTS)} failed, 2892 passed in 41.27s" in reduced
    assert "PASSED" not in reduced
    assert "[… " in reduced and " lines …]" in reduced  # what went is counted


def test_a_2000_line_diff_keeps_every_hunk_header_and_file() -> None:
    diff, headers = unified_diff(2_000)
    reduced, kind = reduce_text(diff)
    assert kind.startswith("unified diff")
    kept = reduced.splitlines()
    assert [line for line in kept if line.startswith("@@")] == headers
    files = [line for line in diff.splitlines() if line.startswith(("--- ", "+++ "))]
    assert [line for line in kept if line.startswith(("--- ", "+++ "))] == files
    assert "+    new = compute(0, 0, strict=True)" in reduced  # changed lines stay
    assert "context line 0 of hunk" not in reduced
    assert len(reduced) < len(diff) * 0.75


def test_json_stays_valid_json_with_its_shape() -> None:
    text = big_json()
    reduced, kind = reduce_text(text)
    assert kind.startswith("JSON")
    body = reduced.split("\n", 1)[1]
    value = json.loads(body)  # still JSON
    assert value["count"] == 1_500 and value["meta"] == {"source": "api", "page": 1}
    items = value["items"]
    assert items[0]["id"] == 0 and items[-1]["id"] == 1_499
    assert any(isinstance(i, str) and "more items" in i for i in items)
    assert len(reduced) < len(text) / 50


def test_a_table_keeps_its_header_first_and_last_rows() -> None:
    text = markdown_table()
    reduced, kind = reduce_text(text)
    assert kind.startswith("table")
    lines = reduced.splitlines()[1:]
    assert lines[:2] == ["| file | lines | coverage |", "|---|---:|---:|"]
    assert "| src/pkg/module_0.py | 100 | 0% |" in lines
    assert lines[-1] == "| src/pkg/module_399.py | 499 | 99% |"
    assert "| … 393 rows elided … |" in lines


def test_repeated_lines_collapse_with_a_count() -> None:
    text = "starting\n" + "waiting for the lock\n" * 500 + "done"
    reduced, kind = reduce_text(text)
    assert kind == "repeated lines counted"
    assert "waiting for the lock  [repeated 500 times]" in reduced
    assert reduced.endswith("done")


def test_a_reduced_text_is_never_reduced_again_and_prose_is_left_alone() -> None:
    reduced, _ = reduce_text(pytest_log(500))
    assert reduced.startswith(MARK)
    assert reduce_text(reduced) == (reduced, "")
    prose = " ".join(f"word{i}" for i in range(2_000))
    assert reduce_text(prose) == (prose, "")
