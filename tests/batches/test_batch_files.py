"""A bad file never stops a batch with a traceback, a hang or a MemoryError.

A task list that cannot be read is one line naming the file and the line (exit 2); so is a
results file that is not a regular file. A line of `results.jsonl` that is not a task result
is skipped with a warning naming it, and its task counts as not done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow.batches import batch
from swarmflow.cli import main
from swarmflow.testing import FunctionModel
from tests.batches.batch_target import answer, solve, task_list

ROOT = Path(__file__).resolve().parents[2]
FLOW = "tests.batches.batch_target:solve"
BIG = 16 * 1024 * 1024 + 10


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("second_line", "why"),
    [
        (b'{"n": "caf\xe9"}', "not UTF-8 text (byte 0xe9 at column 11)"),
        (b'{"n": 1, "x": ' + nested(150).encode() + b"}", "nested deeper than 100 levels"),
        (b'{"n": ' + nested(100_000).encode() + b"}", "nested deeper than 100 levels"),
        (b'{"n": "' + b"x" * BIG + b'"}', "longer than 16777216 bytes"),
        (b'{"n": 1', "not JSON: Expecting ',' delimiter"),
        (b"[1, 2]", "a task is a JSON object of the flow's inputs, got list"),
    ],
    ids=["not-utf8", "deep", "deeper-than-python", "huge", "not-json", "not-object"],
)
def test_a_bad_task_list_line_is_one_line_naming_file_and_line(
    tmp_path: Path, second_line: bytes, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b'{"n": 1}\n' + second_line + b"\n")
    out = tmp_path / "out"
    assert main(["batch", FLOW, "--inputs", str(tasks), "--out", str(out), "--demo"]) == 2
    err = capsys.readouterr().err
    assert err == f"swarmflow batch: {tasks}:2: {why}\n"
    assert not (out / "results.jsonl").exists()


def command(*argv: str) -> subprocess.CompletedProcess[str]:
    """`swarmflow batch ...` in a process of its own: a hang is a timeout, not a stuck suite."""
    cmd = [sys.executable, "-m", "swarmflow.cli", "batch", FLOW, *argv, "--demo"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def test_a_fifo_as_the_task_list_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "tasks.jsonl"
    os.mkfifo(fifo)
    done = command("--inputs", str(fifo), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert (
        done.stderr
        == f"swarmflow batch: {fifo}: the task list must be a regular file, not a FIFO (named pipe)\n"
    )


def test_a_fifo_as_results_jsonl_is_refused_not_waited_on(tmp_path: Path) -> None:
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "out"
    tasks.write_text('{"n": 1}\n')
    out.mkdir()
    os.mkfifo(out / "results.jsonl")
    done = command("--inputs", str(tasks), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr == (
        f"swarmflow batch: {out / 'results.jsonl'}: the results file must be a regular file, "
        "not a FIFO (named pipe)\n"
    )


class Counting:
    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.model = FunctionModel(self._answer)

    def _answer(self, req: Any) -> str:
        self.prompts.append(req.prompt)
        return answer(req)


def test_bad_results_lines_are_skipped_with_a_warning_and_their_tasks_are_not_done(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    anyio.run(lambda: batch(solve, task_list(4), out=out, model=FunctionModel(answer)))
    rows = {r["task"]: r for r in lines(out)}
    forged = {**rows["task-000001"], "tokens": "lots"}
    outside = {**rows["task-000003"], "task": "../x", "run_dir": str(tmp_path / "x")}
    path = out / "results.jsonl"
    path.write_bytes(
        b"\n".join([
            json.dumps(forged).encode(),  # 1: a field of the wrong type
            json.dumps(rows["task-000002"]).encode(),  # 2: a good line
            b'{"output": "' + b"y" * BIG + b'"}',  # 3: too long to hold
            nested(100_000).encode(),  # 4: nested past what Python parses
            json.dumps(outside).encode(),  # 5: a task id that is no task's
            b'{"task": "\xff"}',  # 6: not UTF-8
            json.dumps({**rows["task-000004"], "status": 7}).encode(),  # 7: wrong type
        ])
        + b"\n"
    )  # fmt: skip
    assert path.read_bytes().count(b"\n") == 7
    seen = Counting()
    result = anyio.run(lambda: batch(solve, task_list(4), out=out, model=seen.model))
    for number, why in [(1, "tokens: Input should be a valid integer"),
                        (3, "longer than 16777216 bytes"), (4, "nested deeper than 101 levels"),
                        (5, "task: String should match pattern"), (6, "not UTF-8 text"),
                        (7, "status: Input should be")]:  # fmt: skip
        assert any(w.startswith(f"{path}:{number}: not a task result ({why}") and
                   w.endswith("skipped, so its task counts as not done") for w in result.warnings)  # fmt: skip
    assert len(result.warnings) == 6
    # Tasks 1, 3 and 4 had no good line: each line is rebuilt from its run's log, not rerun.
    assert seen.prompts == [] and result.counts() == {"ok": 4}
    again = {r["task"]: r for r in map(json.loads, path.read_bytes().splitlines()[7:])}
    assert sorted(again) == ["task-000001", "task-000003", "task-000004"]
    assert all(again[t]["output"] == rows[t]["output"] for t in again)
    assert not (tmp_path / "x").exists()


def test_the_command_prints_each_warning_on_a_line_of_its_own(tmp_path: Path) -> None:
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "out"
    tasks.write_text('{"n": 1}\n')
    assert command("--inputs", str(tasks), "--out", str(out)).returncode == 0
    results = out / "results.jsonl"
    results.write_text(results.read_text().replace('"tokens": ', '"tokens": -'))
    done = command("--inputs", str(tasks), "--out", str(out))
    assert done.returncode == 0, done.stderr
    warning = f"swarmflow batch: warning: {results}:1: not a task result (tokens: Input should "
    assert [x for x in done.stderr.splitlines() if x.startswith(warning)] != []
