"""Each task's run folder is named after the task: safe, portable, unique within the batch;
a batch folder written when runs were named by place (`task-000001`) goes on in that layout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio

from swarmflow import Agent, Team, agent, batch, flow, run_sync
from swarmflow.record.runs_root import RUN_ID_PATTERN
from swarmflow.testing import FunctionModel


@flow(team=Team([Agent("worker")]))
async def named(id: str) -> str:
    return (await agent("worker", f"do {id}")).text


@flow(team=Team([Agent("worker")]))
async def plain(n: int) -> str:
    return (await agent("worker", f"do {n}")).text


def _model(calls: list[str]) -> FunctionModel:
    def answer(request: object) -> str:
        calls.append(str(getattr(request, "messages", [])[-1]))
        return "done"

    return FunctionModel(answer)


def _run(flow_: object, tasks: list[dict[str, object]], out: Path, calls: list[str]) -> object:
    return anyio.run(lambda: batch(flow_, tasks, out=out, model=_model(calls)))  # type: ignore[arg-type]


def test_runs_are_named_after_their_tasks_and_odd_names_are_made_safe(tmp_path: Path) -> None:
    ids = ["median", "Median", "median", "../../etc/passwd", "..", ".hidden", "", "con",
           "a/b\\c d", "x" * 300, "naïve café", "median-2"]  # fmt: skip
    out = tmp_path / "out"
    result = _run(named, [{"id": i} for i in ids], out, [])
    names = [Path(r.run_dir).name for r in result.results]  # type: ignore[attr-defined]
    assert names == [
        "median", "Median-2", "median-3", "etc-passwd", "task-000005", "hidden", "task-000007",
        "con-2", "a-b-c-d", "x" * 64, "naive-cafe", "median-2-2",
    ]  # fmt: skip
    assert [r.task for r in result.results] == names  # type: ignore[attr-defined]
    assert sorted(os.listdir(out / "runs")) == sorted(names)  # nothing outside runs/
    assert len({n.casefold() for n in names}) == len(names)  # unique on any file system
    for name in names:
        assert RUN_ID_PATTERN.fullmatch(name) and ".." not in name and len(name) <= 128


def test_tasks_without_a_name_keep_their_place_and_a_rerun_finds_its_runs(
    tmp_path: Path,
) -> None:
    out, calls = tmp_path / "out", []
    _run(plain, [{"n": 1}, {"n": 2}], out, calls)
    assert sorted(os.listdir(out / "runs")) == ["task-000001", "task-000002"]
    again = _run(plain, [{"n": 1}, {"n": 2}], out, calls)
    assert len(calls) == 2 and again.progress.skipped == 2  # type: ignore[attr-defined]


def test_a_batch_folder_of_the_older_layout_goes_on_by_place(tmp_path: Path) -> None:
    """The older layout, as a batch wrote it: `runs/task-00000N` for the N-th task whatever
    its name. Task 1 finished with its line, task 2's run ended before its line was written,
    task 3 never started: a re-run pays for task 3 alone and keeps every run in its place."""
    out, calls = tmp_path / "out", []
    runs = out / "runs"
    first = run_sync(named, id="alpha", model=_model(calls), runs_root=runs, run_id="task-000001")
    run_sync(named, id="beta", model=_model(calls), runs_root=runs, run_id="task-000002")
    line = {"task": "task-000001", "input": {"id": "alpha"}, "status": "ok",
            "output": first.output, "run_dir": str(runs / "task-000001")}  # fmt: skip
    (out / "results.jsonl").write_text(json.dumps(line) + "\n")
    calls.clear()
    result = _run(named, [{"id": "alpha"}, {"id": "beta"}, {"id": "gamma"}], out, calls)
    assert len(calls) == 1 and "do gamma" in calls[0]  # alpha and beta are not paid again
    assert sorted(os.listdir(runs)) == ["task-000001", "task-000002", "task-000003"]
    tasks = [r.task for r in result.results]  # type: ignore[attr-defined]
    assert tasks == ["task-000001", "task-000002", "task-000003"]
    assert [r.status for r in result.results] == ["ok"] * 3  # type: ignore[attr-defined]
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(x["task"] for x in lines) == tasks  # one line a task, none doubled
