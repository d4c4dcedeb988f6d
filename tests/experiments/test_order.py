"""The order in which an experiment's runs start: every arm interleaved, in seeded random
blocks, recorded in `experiment.json`, and kept by the runs themselves."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, ConfigError, Team, agent, flow
from swarmflow.core.messages import ModelRequest
from swarmflow.experiments import Arm, Experiment, FunctionGrader, run_experiment
from swarmflow.experiments.order import run_order
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import write_tasks

ARMS = ("a", "b", "c")
TASKS = ("t0", "t1", "t2")


@flow(team=Team([Agent("worker")]))
async def work(task: str, arm: str, repeat: int) -> str:
    return (await agent("worker", f"{arm}/{task}/r{repeat}")).text


def declared(tmp_path: Path, *, seed: int, concurrency: int) -> Experiment:
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        [{"id": t, "inputs": {"task": t}} for t in TASKS])  # fmt: skip
    arms = [Arm(name=a, flow=work, inputs={"arm": a}, reference=a == "a") for a in ARMS]
    grader = FunctionGrader(fn=lambda task, result: True)
    return Experiment(name="order", tasks=tasks, grader=grader, arms=arms, repeats=2,
                      seed=seed, concurrency=concurrency)  # fmt: skip


def started_in(out: Path, experiment: Experiment) -> list[str]:
    """Runs the experiment, one run at a time; the runs in the order their calls came."""
    prompts: list[str] = []

    def policy(request: ModelRequest) -> str:
        prompts.append(request.prompt)
        return "done"

    model = FunctionModel(policy)
    anyio.run(lambda: run_experiment(experiment, out=out, model=model))
    return prompts


def test_runs_of_all_arms_start_interleaved_in_the_recorded_seeded_order(tmp_path: Path) -> None:
    out = tmp_path / "out"
    started = started_in(out, declared(tmp_path, seed=7, concurrency=1))

    record = json.loads((out / "experiment.json").read_text())
    assert record["seed"] == 7
    assert started == record["order"]  # one at a time: the runs kept the recorded order
    assert sorted(started) == sorted(f"{a}/{t}/r{r}" for a in ARMS for t in TASKS for r in (1, 2))
    blocks = [started[i : i + len(ARMS)] for i in range(0, len(started), len(ARMS))]
    for block in blocks:  # a block: one task of one repeat, every arm's run of it
        assert sorted(key.split("/")[0] for key in block) == list(ARMS)
        assert len({key.split("/", 1)[1] for key in block}) == 1
    repeats = [int(key.rsplit("/r", 1)[1]) for key in started]
    assert repeats == sorted(repeats)  # every run of repeat 1 before any of repeat 2
    assert [key.split("/")[0] for key in started] != sorted(key.split("/")[0] for key in started)


def test_the_order_is_the_seeds_and_changes_with_it() -> None:
    first = run_order(ARMS, TASKS, 2, seed=7)
    assert run_order(ARMS, TASKS, 2, seed=7) == first
    others = {tuple(k.text for k in run_order(ARMS, TASKS, 2, seed=s)) for s in range(8)}
    assert len(others) > 1


def test_a_rerun_keeps_the_recorded_order_and_refuses_another_seed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    started_in(out, declared(tmp_path, seed=7, concurrency=2))
    recorded = json.loads((out / "experiment.json").read_text())["order"]
    assert started_in(out, declared(tmp_path, seed=7, concurrency=2)) == []  # nothing left
    assert json.loads((out / "experiment.json").read_text())["order"] == recorded
    with pytest.raises(ConfigError, match="seed differ"):
        started_in(out, declared(tmp_path, seed=8, concurrency=2))
