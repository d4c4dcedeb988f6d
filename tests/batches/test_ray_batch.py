"""`batch(on="ray")` on a local Ray head: one actor call per task, a budget actor, cancellation.

Ray takes about 1 GiB and several seconds to start, so every test shares one head (module
scope) and the tests are few. `make test-ray` installs `swarmflow[ray]` and runs them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, ConfigError, Team, agent, flow
from swarmflow.batches import batch
from swarmflow.cli import main
from swarmflow.core.budget import Charge, Limits
from swarmflow.core.messages import ModelRequest, Usage
from swarmflow.core.states import EndReason
from swarmflow.durable.run_log import read_log
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel, Step, tool_call
from tests.batches.batch_target import answer, solve, task_list
from tests.dsl.helpers import flow_text

ray = pytest.importorskip("ray", reason="Ray is not installed (make test-ray installs it)")

pytestmark = pytest.mark.anyio
PREFIX = "swarmflow-batch-"
WAIT = 120
"""Seconds a test waits on Ray for what it expects, at most (a loaded 2-core machine)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    try:  # a head of its own (never RAY_ADDRESS's), on ports Ray picks free; 2 CPUs, as CI has
        ray.init(
            address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
            object_store_memory=100 * 1024 * 1024,
        )  # fmt: skip
        yield
    finally:
        ray.shutdown()  # also after a start that failed halfway


class Gate:
    """A Ray actor the workers' models report to: the prompts sent and the calls still inside."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.entered: set[str] = set()
        self.left: set[str] = set()
        self.arrived = anyio.Event()
        self.emptied = anyio.Event()
        self.want = 0

    def enter(self, call: str, prompt: str) -> None:
        self.prompts.append(prompt)
        self.entered.add(call)
        if self.want and len(self.prompts) >= self.want:
            self.arrived.set()

    def leave(self, call: str) -> None:
        self.left.add(call)
        self.emptied.set()  # woken on every leave: `settled` looks again
        self.emptied = anyio.Event()

    async def wait_for(self, calls: int) -> None:
        self.want = calls
        if len(self.prompts) < calls:
            await self.arrived.wait()

    def seen(self) -> tuple[list[str], int]:
        return self.prompts, len(self.entered - self.left)

    async def settled(self) -> tuple[list[str], int]:
        """`seen()` once every call that entered has left, or after WAIT seconds. An async
        actor runs its callers' messages in no set order, so a call's `leave`, sent as its
        run was cancelled, may reach it after the batch is over: waited for, not raced."""
        with anyio.move_on_after(WAIT):
            while not self.entered <= self.left:
                await self.emptied.wait()
        return self.seen()


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


def reporting(
    seen: Any, *, hang: bool = False, kill: Path | None = None, as_estimated: bool = False
) -> FunctionModel:
    """Answers from the prompt (as in a local batch), telling `seen` what it was asked; each
    call uses 1,500 tokens of prompt and 500 of output.

    `hang`: every call waits until it is cancelled. `kill`: the first time any call of task 7
    checks its answer, the worker's process is killed with SIGKILL (the file marks it done).
    `as_estimated`: each call uses the prompt tokens the session estimated and at most the
    output its cap allows, as an endpoint does, so no call spends more than it reserved.
    """

    async def policy(req: ModelRequest) -> Step:
        call = uuid.uuid4().hex
        try:  # entered before the report's reply comes back, so left even if cancelled then
            await seen.enter.remote(call, req.prompt)
            if kill is not None and req.prompt.startswith("check 7:") and first_time(kill):
                os.kill(os.getpid(), signal.SIGKILL)
            if hang:
                await anyio.sleep_forever()
            if as_estimated:
                usage = Usage(input=req.estimated_prompt_tokens, output=min(500, req.max_tokens))
            else:
                usage = Usage(input=1_500, output=500)
            return Step(answer(req), usage=usage)
        finally:
            with anyio.CancelScope(shield=True):
                await seen.leave.remote(call)

    return FunctionModel(policy)


async def test_a_hundred_tasks_on_ray_each_run_in_its_run_dir(
    cluster: None, tmp_path: Path
) -> None:
    seen = gate()
    result = await batch(solve, task_list(100, failing=41), out=tmp_path, concurrency=16,
                         on="ray", budget={"tokens": 10**9}, model=reporting(seen))  # fmt: skip
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
    # Each run's last call settles just before the run ends, and the batch reads the budget
    # actor's ledger as each result comes back: it finds every call counted, none missing.
    logged = sum(read_log(d).spent.tokens for d in (tmp_path / "runs").iterdir())
    assert result.progress.ledger.spent_tokens == logged == 200 * 2_000
    assert result.progress.tokens == logged
    assert batch_actors() == []  # the batch's actors are gone with it


def recording_keeper(log: Path) -> type[Any]:
    """The budget actor, also writing each message it runs (and for which task) to `log`."""
    from swarmflow.batches.ray_ledger import BudgetKeeper

    class Recording(BudgetKeeper):
        def _note(self, kind: str, task: str) -> None:
            with log.open("a") as handle:
                handle.write(f"{kind} {task}\n")

        def reserve(self, task: str, charge: Charge) -> Any:
            self._note("reserve", task)
            return super().reserve(task, charge)

        def release(self, task: str, charge: Charge) -> None:
            self._note("release", task)
            super().release(task, charge)

        def settle(self, task: str, held: Charge, spent: Charge) -> None:
            self._note("settle", task)
            # The base's own release and spend, without noting them as messages of their own.
            BudgetKeeper.release(self, task, held)
            BudgetKeeper.spend(self, task, spent, False)

        def spend(self, task: str, charge: Charge, replayed: bool) -> None:
            self._note("spend", task)
            super().spend(task, charge, replayed)

    return Recording


async def test_a_shared_budget_on_ray_stops_the_batch_without_overspending(
    cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarmflow.batches import ray_exec

    seen, messages = gate(), tmp_path / "keeper.log"
    with monkeypatch.context() as patched:
        patched.setattr(ray_exec, "BudgetKeeper", recording_keeper(messages))
        first = await batch(solve, task_list(20), out=tmp_path, concurrency=6, on="ray",
                            budget={"tokens": 12_000}, model=reporting(seen, as_estimated=True))  # fmt: skip
    # Every answered call reached the budget actor as one settlement: its estimate freed and
    # its spend counted in one step, so that no other worker's reservation came in between.
    kinds = Counter(line.split()[0] for line in messages.read_text().splitlines())
    calls = sum(read_log(d).spent.calls for d in (tmp_path / "runs").iterdir())
    assert kinds["settle"] == calls > 0 and kinds["spend"] == 0
    assert first.stopped is not None and "batch budget refused" in first.stopped
    assert 0 < len(first.results) < 20
    # What every run's own event log says was spent, finished or not: no call spends more
    # than it reserved, so the budget holds exactly; a settlement frees its estimate and
    # counts its spend in one step of the keeper, so no reservation slips in between.
    spent = sum(read_log(d).spent.tokens for d in (tmp_path / "runs").iterdir())
    # A call is refused only when its estimate (its prompt and at most 1,024 tokens of
    # output) does not fit next to what was spent and what the other five calls hold.
    assert 12_000 - 6 * (1_024 + 50) < spent <= 12_000
    assert first.progress.ledger.spent_tokens == spent
    rest = await batch(solve, task_list(20), out=tmp_path, concurrency=6, on="ray",
                       model=reporting(seen))  # fmt: skip
    assert rest.counts() == {"ok": 20} and rest.unfinished == 0


async def test_a_cancelled_ray_batch_leaves_nothing_running(cluster: None, tmp_path: Path) -> None:
    seen = gate()
    async with anyio.create_task_group() as group:

        async def cancel_once_calls_are_in_flight() -> None:
            with anyio.fail_after(WAIT):
                await seen.wait_for.remote(8)
            assert batch_actors() != []
            group.cancel_scope.cancel()

        group.start_soon(cancel_once_calls_are_in_flight)
        await batch(solve, task_list(16), out=tmp_path, concurrency=8, on="ray",
                    model=reporting(seen, hang=True))  # fmt: skip
    prompts, inside = await seen.settled.remote()
    assert len(prompts) >= 8 and inside == 0  # every call was cancelled on its worker
    assert batch_actors() == []
    assert not claimed(tmp_path)  # each run recorded its end
    result = await batch(solve, task_list(16), out=tmp_path, concurrency=8, on="ray",
                         model=reporting(seen))  # fmt: skip
    assert result.counts() == {"ok": 16}


async def test_a_killed_worker_is_restarted_and_its_tasks_resume(
    cluster: None, tmp_path: Path
) -> None:
    seen, marker = gate(), tmp_path / "killed"
    result = await batch(solve, task_list(12), out=tmp_path / "out", concurrency=4, on="ray",
                         workers=1, model=reporting(seen, kill=marker))  # fmt: skip
    assert marker.exists() and result.counts() == {"ok": 12}
    # Without a shared budget the batch counts what the finished runs spent, over every
    # attempt (task 7's first call, made before its worker died, included).
    assert result.progress.tokens == 12 * 2 * 2_000
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
    assert main([*argv, "--on", "bogus"]) == 2
    assert "on='bogus': use 'local'" in capsys.readouterr().err


@flow(team=Team([Agent("coder", tools=["write_file", "submit"], workspace="worktree")]))
async def code(n: int) -> str:
    """One coder in its own worktree writes one file."""
    return (await agent("coder", f"write n{n}.txt")).text


def coding(seen: Any) -> FunctionModel:
    """Writes the file the prompt names, then submits; tells `seen` which process it ran in."""

    async def policy(req: ModelRequest) -> Step:
        await seen.enter.remote(uuid.uuid4().hex, f"pid {os.getpid()}")
        if any(m.role == "tool" for m in req.messages):
            return Step(tool_calls=[tool_call("submit", summary="written")])
        name = req.prompt.split()[-1]
        return Step(tool_calls=[tool_call("write_file", path=name, content=f"{name}\n")])

    return FunctionModel(policy)


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout


async def test_worktrees_are_made_by_the_worker_in_the_tasks_run_dirs(
    cluster: None, tmp_path: Path
) -> None:
    repo, out, seen = tmp_path / "repo", tmp_path / "out", gate()
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("demo\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    result = await batch(code, [{"n": n} for n in range(3)], out=out, on="ray", workers=2,
                         repo=repo, keep_workspaces=True, model=coding(seen))  # fmt: skip
    assert result.counts() == {"ok": 3}
    prompts, _ = await seen.seen.remote()
    assert f"pid {os.getpid()}" not in prompts  # every call ran on a worker, not here
    listed = git(repo, "worktree", "list")
    for row in rows(out):
        run_dir = Path(row["run_dir"])
        events = [json.loads(x) for x in (run_dir / EVENTS_FILE).read_text().splitlines()]
        change = next(e for e in events if e["type"] == "workspace_changed")
        assert git(repo, "cat-file", "-t", change["commit"]).strip() == "commit"
        assert change["git_branch"] in git(repo, "branch", "--list")
        assert str(run_dir / "worktrees") in listed  # made by the worker, in the run dir


def test_the_budget_keeper_frees_a_dead_attempts_estimates_and_counts_replays_once() -> None:
    from swarmflow.batches.ray_ledger import BudgetKeeper

    keeper, call = BudgetKeeper(Limits(tokens=10_000)), Charge(4_000, 0.0, 1)
    keeper.begin("t1")
    assert keeper.reserve("t1", call)[0] is None
    keeper.release("t1", call)  # settled: the estimate goes, the actual spend comes
    keeper.spend("t1", Charge(3_000, 0.0, 1), False)
    assert keeper.reserve("t1", call)[0] is None  # in flight when its worker dies
    refused = keeper.reserve("t2", call)[0]
    assert refused is not None and refused[0] == EndReason.BUDGET_EXHAUSTED_BEFORE_CALL.value
    keeper.begin("t1")  # the retry: the dead call's estimate is given back
    keeper.spend("t1", Charge(3_000, 0.0, 1), True)  # its journal replays the settled call
    assert keeper.state()[0] == 3_000 and keeper.reserve("t2", call)[0] is None
    keeper.begin("t3")  # a run begun by an earlier invocation: its replayed spend counts
    keeper.spend("t3", Charge(500, 0.0, 1), True)
    assert keeper.state()[0] == 3_500 and keeper.ledger.refused is not None


async def test_a_model_that_cannot_be_sent_to_the_workers_is_refused_clearly(
    cluster: None, tmp_path: Path
) -> None:
    lock = threading.Lock()  # a lock cannot be pickled, so neither can this model

    def holding_a_lock(req: ModelRequest) -> str:
        with lock:
            return answer(req)

    with pytest.raises(ConfigError, match="cannot be pickled"):
        await batch(
            solve, task_list(2), out=tmp_path, on="ray", model=FunctionModel(holding_a_lock)
        )
    assert not (tmp_path / "results.jsonl").exists() and batch_actors() == []


@flow(team=Team([Agent("worker")]))
async def arm_work(n: int, arm: str) -> str:
    return (await agent("worker", f"{arm}/t{n}/r1")).text


async def test_four_arms_share_one_pool_and_start_interleaved(
    cluster: None, tmp_path: Path
) -> None:
    from swarmflow.experiments import Arm, Experiment, FunctionGrader, run_experiment

    (tmp_path / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": f"t{n}", "inputs": {"n": n}}) + "\n" for n in range(3))
    )
    arms = [Arm(name=a, flow=arm_work, inputs={"arm": a}, reference=a == "a") for a in "abcd"]
    experiment = Experiment(
        name="ray-order", tasks=tmp_path / "tasks.jsonl", arms=arms, concurrency=1,
        grader=FunctionGrader(fn=lambda task, result: result.output == "done"),
    )  # fmt: skip
    seen = gate()

    async def policy(req: ModelRequest) -> str:
        call = uuid.uuid4().hex
        await seen.enter.remote(call, req.prompt)
        await seen.leave.remote(call)
        return "done"

    out = tmp_path / "out"
    result = await run_experiment(experiment, out=out, on="ray", model=FunctionModel(policy))

    assert (result.total, result.finished, result.stopped) == (12, 12, [])
    order = json.loads((out / "experiment.json").read_text())["order"]
    prompts, inside = await seen.seen.remote()
    assert prompts == order and inside == 0  # one at a time: in the recorded order
    for start in range(0, 12, 4):  # each task's block holds every arm's run of it
        assert sorted(key[0] for key in order[start : start + 4]) == list("abcd")
    assert batch_actors() == []  # one pool for every arm, gone with the experiment
