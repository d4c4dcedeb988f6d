"""`batch(on="ray")` on a local Ray head: one actor call per task, a budget actor, cancellation.

Ray takes about 1 GiB and several seconds to start, so every test shares one head (module
scope) and the tests are few. `make test-ray` installs `swarmflow[ray]` and runs them.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow.batches import batch
from swarmflow.cli import main
from swarmflow.core.messages import ModelRequest, Usage
from swarmflow.run_dirs import read_log
from swarmflow.testing import FunctionModel, Step
from tests.batches.batch_target import answer, solve, task_list
from tests.dsl.helpers import flow_text

ray = pytest.importorskip("ray", reason="Ray is not installed (make test-ray installs it)")

pytestmark = pytest.mark.anyio
PREFIX = "swarmflow-batch-"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
        object_store_memory=100 * 1024 * 1024,
    )  # fmt: skip
    try:
        yield
    finally:
        ray.shutdown()


class Gate:
    """A Ray actor the workers' models report to: prompts sent, calls inside, a kill switch."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.inside = 0
        self.arrived = anyio.Event()
        self.want = 0

    def enter(self, prompt: str) -> None:
        self.prompts.append(prompt)
        self.inside += 1
        if self.want and len(self.prompts) >= self.want:
            self.arrived.set()

    def leave(self) -> None:
        self.inside -= 1

    async def wait_for(self, calls: int) -> None:
        self.want = calls
        if len(self.prompts) < calls:
            await self.arrived.wait()

    def seen(self) -> tuple[list[str], int]:
        return self.prompts, self.inside


def gate() -> Any:
    return ray.remote(Gate).remote()


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]


def batch_actors() -> list[str]:
    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith(PREFIX)]  # fmt: skip


def first_time(marker: Path) -> bool:
    """True once: the marker file says it was."""
    if marker.exists():
        return False
    marker.write_text("killed")
    return True


def claimed(out: Path) -> list[Path]:
    return list(out.glob("runs/*/run.pid"))


def reporting(seen: Any, *, hang: bool = False, kill: Path | None = None) -> FunctionModel:
    """Answers from the prompt (as in a local batch), telling `seen` what it was asked.

    `hang`: every call waits until it is cancelled. `kill`: the first time any call of task 7
    checks its answer, the worker's process is killed with SIGKILL (the file marks it done).
    """

    async def policy(req: ModelRequest) -> Step:
        await seen.enter.remote(req.prompt)
        try:
            if kill is not None and req.prompt.startswith("check 7:") and first_time(kill):
                os.kill(os.getpid(), signal.SIGKILL)
            if hang:
                await anyio.sleep_forever()
            return Step(answer(req), usage=Usage(input=1_500, output=500))
        finally:
            with anyio.CancelScope(shield=True):
                await seen.leave.remote()

    return FunctionModel(policy)


async def test_a_hundred_tasks_on_ray_each_run_in_its_run_dir(
    cluster: None, tmp_path: Path
) -> None:
    seen = gate()
    result = await batch(solve, task_list(100, failing=41), out=tmp_path, concurrency=16,
                         on="ray", model=reporting(seen))  # fmt: skip
    assert result.counts() == {"ok": 99, "failed": 1} and result.unfinished == 0
    written = rows(tmp_path)
    assert len({r["task"] for r in written}) == 100
    failed = next(r for r in written if r["status"] == "failed")
    assert failed["input"]["n"] == 41 and "task 41 was told to fail" in failed["error"]
    for row in written:  # the driver's run dirs hold the workers' events: report reads them
        assert Path(row["run_dir"]).parent == tmp_path / "runs"
        assert read_log(Path(row["run_dir"])).status == row["status"]
    prompts, inside = await seen.seen.remote()
    assert len(prompts) == 200 and inside == 0
    assert result.progress.tokens == 200 * 2_000
    assert batch_actors() == []  # the batch's actors are gone with it


async def test_a_shared_budget_on_ray_stops_the_batch_without_overspending(
    cluster: None, tmp_path: Path
) -> None:
    seen = gate()
    first = await batch(solve, task_list(30), out=tmp_path, concurrency=6, on="ray",
                        budget={"tokens": 40_000}, model=reporting(seen))  # fmt: skip
    assert first.stopped is not None and "batch budget refused" in first.stopped
    assert 0 < len(first.results) < 30
    # What every run's own event log says was spent, finished or not: the budget held.
    spent = sum(read_log(d).spent.tokens for d in (tmp_path / "runs").iterdir())
    assert 20_000 < spent <= 40_000
    assert first.progress.ledger.spent_tokens == spent
    rest = await batch(solve, task_list(30), out=tmp_path, concurrency=6, on="ray",
                       model=reporting(seen))  # fmt: skip
    assert rest.counts() == {"ok": 30} and rest.unfinished == 0


async def test_a_cancelled_ray_batch_leaves_nothing_running(cluster: None, tmp_path: Path) -> None:
    seen = gate()
    async with anyio.create_task_group() as group:

        async def cancel_once_calls_are_in_flight() -> None:
            await seen.wait_for.remote(8)
            assert batch_actors() != []
            group.cancel_scope.cancel()

        group.start_soon(cancel_once_calls_are_in_flight)
        await batch(solve, task_list(40), out=tmp_path, concurrency=8, on="ray",
                    model=reporting(seen, hang=True))  # fmt: skip
    prompts, inside = await seen.seen.remote()
    assert len(prompts) >= 8 and inside == 0  # every call was cancelled on its worker
    assert batch_actors() == []
    assert not claimed(tmp_path)  # each run recorded its end
    result = await batch(solve, task_list(40), out=tmp_path, concurrency=8, on="ray",
                         model=reporting(seen))  # fmt: skip
    assert result.counts() == {"ok": 40}


async def test_a_killed_worker_is_restarted_and_its_tasks_resume(
    cluster: None, tmp_path: Path
) -> None:
    seen, marker = gate(), tmp_path / "killed"
    result = await batch(solve, task_list(12), out=tmp_path / "out", concurrency=4, on="ray",
                         workers=1, model=reporting(seen, kill=marker))  # fmt: skip
    assert marker.exists() and result.counts() == {"ok": 12}
    task7 = next(r for r in rows(tmp_path / "out") if r["input"]["n"] == 7)
    assert task7["resumed"] and task7["output"].startswith("done(check 7:")
    prompts, _ = await seen.seen.remote()
    assert prompts.count("task 7") == 1  # its first call was replayed from the journal
    assert prompts.count(next(p for p in prompts if p.startswith("check 7:"))) == 2


def test_the_command_line_runs_a_swarm_flow_on_ray(
    cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    swarm, tasks, out = tmp_path / "one.swarm", tmp_path / "tasks.jsonl", tmp_path / "out"
    swarm.write_text(flow_text("  x = a(task)\n  return x.text"))
    tasks.write_text("".join(json.dumps({"task": f"job {i}"}) + "\n" for i in range(6)))
    argv = ["batch", str(swarm), "--inputs", str(tasks), "--out", str(out), "--demo"]
    assert main([*argv, "--on", "ray", "--workers", "2", "--budget-tokens", "1000000"]) == 0
    assert "done 6/6" in capsys.readouterr().err
    written = rows(out)
    assert sorted(r["input"]["task"] for r in written) == [f"job {i}" for i in range(6)]
    assert all(r["status"] == "ok" and "job" in r["output"] for r in written)
    assert main([*argv, "--on", "bogus"]) == 1
    assert "on='bogus': use 'local'" in capsys.readouterr().err
