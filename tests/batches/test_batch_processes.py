"""Batches and other processes: a kill between a run's end and its line, two batches on one
`--out`, a run directory another live process holds. Every other process here is real."""

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
from swarmflow.durable.run_log import read_log
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel
from tests.batches import batch_target
from tests.batches.batch_target import answer, solve, task_list
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]


class Counting:
    """A model that answers from the prompt alone and records what it was asked."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.model = FunctionModel(self._answer)

    def _answer(self, req: Any) -> str:
        self.prompts.append(req.prompt)
        return answer(req)


def asked_about(prompts: list[str], n: int) -> list[str]:
    return [p for p in prompts if p.startswith((f"task {n}", f"check {n}:"))]


@pytest.mark.parametrize("fails", [False, True], ids=["ok", "failed"])
def test_a_kill_between_a_runs_end_and_its_line_gets_the_line_from_the_runs_log(
    tmp_path: Path, fails: bool
) -> None:
    out = tmp_path / "out"
    tasks = task_list(batch_target.STALL_TASKS, failing=9 if fails else None)
    argv = [sys.executable, batch_target.__file__, "stall-line", str(out), "9"]
    kill_when_ready([*argv, *(["fail"] if fails else [])], ENV)
    assert 9 not in {r["input"]["n"] for r in lines(out)}  # killed before its line
    run_dir = out / "runs" / "task-000010"
    logged = json.loads((run_dir / EVENTS_FILE).read_text().splitlines()[-1])
    assert logged["type"] == "run_finished"  # ... and after its run ended
    seen = Counting()
    result = anyio.run(lambda: batch(solve, tasks, out=out, concurrency=4, model=seen.model))
    assert asked_about(seen.prompts, 9) == []  # not run again, not paid twice
    nine = [r for r in lines(out) if r["input"]["n"] == 9]
    assert len(nine) == 1
    line = nine[0]
    assert line["status"] == logged["status"] == ("failed" if fails else "ok")
    if fails:
        assert line["output"] is None and "task 9 was told to fail" in line["error"]
    else:
        reference = anyio.run(lambda: batch(solve, [{"n": 9}], out=tmp_path / "ref",
                                            model=FunctionModel(answer)))  # fmt: skip
        assert line["output"] == reference.results[0].output
        assert line["output"].startswith("done(check 9:") and line["error"] is None
    assert line["tokens"] == read_log(run_dir).spent.tokens > 0
    assert line["seconds"] == logged["seconds"] > 0 and line["cost"] == logged["cost"]
    assert any("rebuilt from the run's log" in note for note in line["notes"])
    assert result.unfinished == 0 and len(lines(out)) == batch_target.STALL_TASKS


def test_a_second_batch_on_one_out_is_refused_naming_the_first_and_runs_once_it_is_gone(
    tmp_path: Path,
) -> None:
    out, tasks = tmp_path / "out", tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in task_list()))
    cli = [sys.executable, "-m", "swarmflow.cli", "batch", "tests.batches.batch_target:solve",
           "--inputs", str(tasks), "--out", str(out), "--demo", "--concurrency", "4"]  # fmt: skip
    first = subprocess.Popen(
        [sys.executable, batch_target.__file__, str(out), "9"], stdout=subprocess.PIPE, text=True,
        env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "READY"
        second = subprocess.run(cli, env=ENV, cwd=ROOT, capture_output=True, text=True,
                                timeout=120, check=False)  # fmt: skip
        written = lines(out)
    finally:
        first.kill()
        first.wait(timeout=30)
        if first.stdout is not None:
            first.stdout.close()
    assert second.returncode == 2, second.stderr
    assert second.stderr.count("\n") == 1
    assert f"in use by another batch (process {first.pid})" in second.stderr
    assert all(r["status"] == "ok" for r in written)  # nothing of the first's marked failed
    assert len({r["task"] for r in written}) == len(written)
    # The kernel dropped the lock with the killed batch: the next one goes on where it was.
    again = subprocess.run(cli, env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=300,
                           check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    rows = lines(out)
    assert sorted(r["input"]["n"] for r in rows) == list(range(batch_target.TASKS))
    assert rows[: len(written)] == written
    assert next(r for r in rows if r["input"]["n"] == 9)["resumed"]


def test_a_run_directory_live_in_another_process_is_never_run_into(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runs, taken = out / "runs", out / "runs" / "task-000002"
    holder = subprocess.Popen(
        [sys.executable, batch_target.__file__, "run", str(runs), "task-000002", "1"],
        stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "READY"
        record = {p.name: p.read_bytes() for p in taken.iterdir() if p.is_file()}
        seen = Counting()
        result = anyio.run(lambda: batch(solve, task_list(3), out=out, model=seen.model))
        assert {p.name: p.read_bytes() for p in taken.iterdir() if p.is_file()} == record
    finally:
        holder.kill()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    assert asked_about(seen.prompts, 1) == []
    assert result.counts() == {"ok": 2} and result.unfinished == 1
    assert "task-000002" not in {r["task"] for r in lines(out)}  # not recorded as failed
    assert [w for w in result.warnings if f"in use by process {holder.pid}" in w] != []
    again = anyio.run(lambda: batch(solve, task_list(3), out=out, model=FunctionModel(answer)))
    assert again.counts() == {"ok": 3}
    assert next(r for r in lines(out) if r["task"] == "task-000002")["resumed"]
