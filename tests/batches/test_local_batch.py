"""`batch`: many runs of one flow, bounded, resumable, with shared or per-task budgets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import ConfigError
from swarmflow.batches import batch
from swarmflow.core.messages import ModelRequest, Usage
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel, Step
from tests.batches import batch_target
from tests.batches.batch_target import answer, flaky, flaky_tasks, solve, task_list
from tests.support.kill import kill_when_ready

pytestmark = pytest.mark.anyio


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]


def has_events(row: dict[str, Any]) -> bool:
    return Path(row["run_dir"], EVENTS_FILE).exists()


def claimed(out: Path) -> list[Path]:
    return list(out.glob("runs/*/run.pid"))


class Counting:
    """A model that answers from the prompt alone and records what it was asked."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.model = FunctionModel(self._answer)

    def _answer(self, req: ModelRequest) -> str:
        self.prompts.append(req.prompt)
        return answer(req)


async def test_two_hundred_tasks_at_concurrency_32_all_recorded(tmp_path: Path) -> None:
    seen = Counting()
    peak = 0

    def watch(progress: Any) -> None:
        nonlocal peak
        peak = max(peak, progress.running)

    result = await batch(
        solve, task_list(200, failing=77), out=tmp_path, concurrency=32, model=seen.model,
        on_progress=watch,
    )  # fmt: skip
    rows = lines(tmp_path)
    assert len(rows) == 200 and len({r["task"] for r in rows}) == 200
    failed = [r for r in rows if r["status"] != "ok"]
    assert [(r["input"]["n"], r["status"]) for r in failed] == [(77, "failed")]
    assert "task 77 was told to fail" in failed[0]["error"]
    ok = {r["input"]["n"]: r for r in rows if r["status"] == "ok"}
    assert ok[5]["output"].startswith("done(check 5:")
    assert all(has_events(r) and r["tokens"] > 0 for r in rows)
    assert 1 < peak <= 32
    assert result.counts() == {"ok": 199, "failed": 1} and result.unfinished == 0
    assert "failed" in result.summary() and "199" in result.summary()
    assert len(seen.prompts) == 400


async def test_a_rerun_skips_every_finished_task(tmp_path: Path) -> None:
    await batch(solve, task_list(6, failing=2), out=tmp_path, model=FunctionModel(answer))
    again = Counting()
    result = await batch(solve, task_list(6, failing=2), out=tmp_path, model=again.model)
    assert again.prompts == []
    assert len(lines(tmp_path)) == 6 and result.progress.skipped == 6
    assert result.counts() == {"ok": 5, "failed": 1}


def test_a_killed_batch_runs_again_paying_only_for_unfinished_tasks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, batch_target.__file__, str(out), "9"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "READY"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    before = lines(out)
    assert 9 not in {r["input"]["n"] for r in before}
    seen = Counting()
    result = anyio.run(lambda: batch(solve, task_list(), out=out, concurrency=4, model=seen.model))
    after = lines(out)
    assert after[: len(before)] == before  # what was written stays as it was
    assert sorted(r["input"]["n"] for r in after) == list(range(batch_target.TASKS))
    assert result.unfinished == 0 and result.counts() == {"ok": batch_target.TASKS}
    done_before = {r["input"]["n"] for r in before}
    assert not any(p.startswith((f"task {n} ", f"check {n}:")) for n in done_before
                   for p in seen.prompts)  # fmt: skip
    assert "task 9" not in seen.prompts  # its first call is replayed from its journal
    assert any(p.startswith("check 9:") for p in seen.prompts)
    resumed = {r["input"]["n"] for r in after if r["resumed"]}
    assert 9 in resumed
    reference = {r["input"]["n"]: r["output"] for r in after}
    assert reference[9].startswith("done(check 9:")


async def test_a_shared_budget_stops_the_batch_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    def costly(req: ModelRequest) -> Step:  # 2,000 tokens a call: the budget runs out
        return Step(answer(req), usage=Usage(input=1_500, output=500))

    first = await batch(solve, task_list(30), out=tmp_path, concurrency=4,
                        budget={"tokens": 40_000}, model=FunctionModel(costly))  # fmt: skip
    assert first.stopped is not None and 0 < len(first.results) < 30
    spent = first.progress.ledger.spent_tokens
    assert 20_000 < spent <= 40_000  # reserve-before-call: no call starts that would not fit
    assert all(r["status"] == "ok" for r in lines(tmp_path))
    rest = await batch(solve, task_list(30), out=tmp_path, concurrency=4,
                       model=FunctionModel(answer))  # fmt: skip
    assert rest.unfinished == 0 and rest.counts() == {"ok": 30}
    assert len(lines(tmp_path)) == 30


async def test_a_per_task_budget_fails_only_the_tasks_over_it(tmp_path: Path) -> None:
    result = await batch(solve, task_list(3), out=tmp_path, run_budget={"calls": 1},
                         model=FunctionModel(answer))  # fmt: skip
    assert result.counts() == {"failed": 3} and result.stopped is None
    assert all("BudgetExhausted" in (r["error"] or "") for r in lines(tmp_path))


async def test_a_cancelled_batch_writes_what_finished_and_resumes(tmp_path: Path) -> None:
    calls = 0
    stop = anyio.Event()

    def policy(req: ModelRequest) -> str:
        nonlocal calls
        calls += 1
        if calls == 25:
            stop.set()
        return answer(req)

    async with anyio.create_task_group() as group:

        async def cancel_when_told() -> None:
            await stop.wait()
            group.cancel_scope.cancel()

        group.start_soon(cancel_when_told)
        await batch(solve, task_list(40), out=tmp_path, concurrency=4, model=FunctionModel(policy))
    written = lines(tmp_path)
    assert 0 < len(written) < 40
    assert not claimed(tmp_path)  # no run is left claimed by this process
    result = await batch(solve, task_list(40), out=tmp_path, concurrency=4,
                         model=FunctionModel(answer))  # fmt: skip
    assert result.counts() == {"ok": 40} and lines(tmp_path)[: len(written)] == written


async def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"n": 1}\n\n[1, 2]\n')
    with pytest.raises(ConfigError, match=r"tasks.jsonl:3: a task is a JSON object"):
        await batch(solve, tasks, out=tmp_path / "o", model=FunctionModel(answer))
    tasks.write_text('{"n": 1}\n{"n": \n')
    with pytest.raises(ConfigError, match=r"tasks.jsonl:2: not JSON"):
        await batch(solve, tasks, out=tmp_path / "o", model=FunctionModel(answer))
    with pytest.raises(ConfigError, match="concurrency must be at least 1"):
        await batch(solve, [], out=tmp_path / "o", concurrency=0)
    with pytest.raises(ConfigError, match="sets budget itself|sets run_id"):
        await batch(solve, [], out=tmp_path / "o", run_id="x")
    with pytest.raises(ConfigError, match="unknown option"):
        await batch(solve, [], out=tmp_path / "o", modle="x")


async def test_a_task_with_wrong_inputs_fails_alone(tmp_path: Path) -> None:
    result = await batch(solve, [{"n": 1}, {"m": 2}, {"n": 3}], out=tmp_path,
                         model=FunctionModel(answer))  # fmt: skip
    rows = lines(tmp_path)
    assert [r["status"] for r in sorted(rows, key=lambda r: r["task"])] == ["ok", "failed", "ok"]
    assert "ConfigError" in next(r["error"] for r in rows if r["status"] == "failed")
    assert result.counts() == {"ok": 2, "failed": 1}


async def test_a_changed_task_list_is_refused_not_skipped(tmp_path: Path) -> None:
    await batch(solve, [{"n": 1}], out=tmp_path, model=FunctionModel(answer))
    with pytest.raises(ConfigError, match="records task-000001 with input"):
        await batch(solve, [{"n": 2}], out=tmp_path, model=FunctionModel(answer))


async def test_a_torn_last_result_line_is_cut_off_and_the_task_runs_again(tmp_path: Path) -> None:
    await batch(solve, task_list(2), out=tmp_path, model=FunctionModel(answer))
    path = tmp_path / "results.jsonl"
    whole = path.read_text().splitlines(keepends=True)
    path.write_text(whole[0] + whole[1][:20])
    result = await batch(solve, task_list(2), out=tmp_path, model=FunctionModel(answer))
    assert result.counts() == {"ok": 2} and len(lines(tmp_path)) == 2


# -- retrying the failed tasks ----------------------------------------------------------------


async def test_retry_failed_runs_only_the_failed_tasks_and_keeps_one_line_each(
    tmp_path: Path,
) -> None:
    flag = tmp_path / "flag"
    flag.touch()
    out, tasks = tmp_path / "out", flaky_tasks(str(flag), 6)
    first = await batch(flaky, tasks, out=out, model=FunctionModel(answer))
    assert first.counts() == {"ok": 3, "failed": 3}
    before = {r["task"]: r for r in lines(out)}
    flag.unlink()
    plain = Counting()
    await batch(flaky, tasks, out=out, model=plain.model)
    assert plain.prompts == [] and {r["task"]: r for r in lines(out)} == before  # failed stays
    retry = Counting()
    result = await batch(flaky, tasks, out=out, model=retry.model, retry_failed=True)
    assert result.counts() == {"ok": 6} and result.progress.skipped == 3
    rows = lines(out)
    assert sorted(r["task"] for r in rows) == sorted(before)  # one line a task, none lost
    # Only the failed (odd) tasks ran, each resumed: its first call replayed, its second made.
    assert sorted(retry.prompts) == [f"check {n}: done(task {n})" for n in (1, 3, 5)]
    after = {r["task"]: r for r in rows}
    assert all(after[t] == r for t, r in before.items() if r["status"] == "ok")
    assert all(after[t]["resumed"] for t, r in before.items() if r["status"] == "failed")


def test_a_retry_killed_midway_loses_no_line_and_doubles_none(tmp_path: Path) -> None:
    flag, out = tmp_path / "flag", tmp_path / "out"
    flag.touch()
    tasks = flaky_tasks(str(flag))
    first = anyio.run(lambda: batch(flaky, tasks, out=out, concurrency=4,
                                    model=FunctionModel(answer)))  # fmt: skip
    assert first.counts() == {"ok": batch_target.TASKS // 2, "failed": batch_target.TASKS // 2}
    before = {r["task"]: r for r in lines(out)}
    flag.unlink()
    kill_when_ready([sys.executable, batch_target.__file__, str(out), "9", str(flag)],
                    {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})  # fmt: skip
    killed = [r["task"] for r in lines(out)]
    assert len(killed) == len(set(killed))  # even mid-retry, never two lines for a task
    # Killed while retrying task 9: its line, and those of the failed tasks not retried yet,
    # come back; the tasks retried before the kill keep their new line alone.
    seen = Counting()
    anyio.run(lambda: batch(flaky, tasks, out=out, concurrency=4, model=seen.model))
    rows = lines(out)
    assert seen.prompts == []  # every task has its one line again: nothing runs
    assert sorted(r["task"] for r in rows) == sorted(before)
    by_task = {r["task"]: r for r in rows}
    nine = next(t for t, r in before.items() if r["input"]["n"] == 9)
    assert by_task[nine] == before[nine]
    assert all(by_task[t] == r for t, r in before.items() if r["status"] == "ok")
    again = anyio.run(lambda: batch(flaky, tasks, out=out, concurrency=4,
                                    model=FunctionModel(answer), retry_failed=True))  # fmt: skip
    assert again.counts() == {"ok": batch_target.TASKS}
    assert sorted(r["task"] for r in lines(out)) == sorted(before)
