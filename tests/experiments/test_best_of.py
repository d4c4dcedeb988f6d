"""Best of k (B1): k independent runs per task, one chosen by a named rule, all k paid for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow
from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import ModelRequest
from swarmflow.experiments import (
    Arm,
    BestOf,
    Experiment,
    FunctionGrader,
    read_experiment,
    regrade_experiment,
    run_experiment,
)
from swarmflow.experiments.execution import _all_keys
from swarmflow.experiments.order import run_order
from swarmflow.experiments.tasks import ExperimentTask
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import write_tasks


@flow(team=Team([Agent("solver")]))
async def solve(question: str) -> str:
    return (await agent("solver", question)).text


def _guesser() -> FunctionModel:
    """Right on the third try of each question, wrong before (scripted: a stand-in for a
    model whose independent samples differ)."""
    tries: dict[str, int] = {}

    def policy(request: ModelRequest) -> str:
        tries[request.prompt] = tries.get(request.prompt, 0) + 1
        return "right" if tries[request.prompt] == 3 else f"wrong {tries[request.prompt]}"

    return FunctionModel(policy, name="guesser-scripted")


def _run(tmp_path: Path, best_of: BestOf) -> Any:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "q1", "inputs": {"question": "q1"}}, {"id": "q2", "inputs": {"question": "q2"}},
    ])  # fmt: skip
    experiment = Experiment(
        name="b1", tasks=tasks, concurrency=1,
        grader=FunctionGrader(fn=lambda task, result: result.output == "right"),
        arms=[Arm(name="B0", flow=solve, reference=True, demo=_guesser),
              Arm(name="B1", flow=solve, demo=_guesser, best_of=best_of)],
    )  # fmt: skip
    out = tmp_path / "out"  # the same folder again: the experiment goes on where it was
    result = anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    assert (result.total, result.finished) == (4, 4)  # 2 + 2x3 runs make 4 rows
    return out, read_experiment(out)


def test_the_oracle_keeps_the_resolved_candidate_and_every_candidate_is_paid(
    tmp_path: Path,
) -> None:
    out, report = _run(tmp_path, BestOf(k=3))
    arms = {a.name: a for a in report.arms}
    assert arms["B0"].passed.k == 0 and arms["B1"].passed.k == 2
    assert json.loads((out / "arms/B1/chosen.json").read_text()) == {"B1/q1/r1": 3, "B1/q2/r1": 3}
    one, b1 = arms["B0"].rows[0], arms["B1"].rows[0]
    assert b1.calls == 3 * one.calls == 3  # all k counted
    spent = 0
    for c in (1, 2, 3):
        log = (out / f"arms/B1.c{c}/runs/q1-r1/events.jsonl").read_text().splitlines()
        calls = [e for e in map(json.loads, log) if e["type"] == "model_called"]
        spent += sum(e["tokens_in"] + e["tokens_out"] for e in calls)
    assert b1.tokens == spent > 2 * one.tokens
    assert b1.run_dir.endswith("arms/B1.c3/runs/q1-r1")
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    chosen = next(g for g in grades if g["arm"] == "B1" and g["task"] == "q1")
    assert chosen["note"].startswith("best of 3 by oracle (the grader): candidate 3")
    assert report.json()["arms"][1]["name"] == "B1"
    assert "B1" in report.text() and "oracle" in (out / "experiment.json").read_text()


def test_a_judge_function_chooses_by_what_it_sees(tmp_path: Path) -> None:
    async def first_answer(task: Any, outcomes: list[Any]) -> int:
        assert [o.output for o in outcomes] == ["wrong 1", "wrong 2", "right"]
        return 0  # always the first candidate: the oracle's pick is not taken

    out, report = _run(tmp_path, BestOf(k=3, choose=first_answer))
    arms = {a.name: a for a in report.arms}
    assert arms["B1"].passed.k == 0
    assert json.loads((out / "arms/B1/chosen.json").read_text()) == {"B1/q1/r1": 1, "B1/q2/r1": 1}
    assert "judge first_answer" in (out / "experiment.json").read_text()


def test_best_of_needs_two_or_more() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        BestOf(k=1)


def test_a_second_run_of_a_best_of_arm_pays_for_nothing_and_keeps_its_choice(
    tmp_path: Path,
) -> None:
    out, first = _run(tmp_path, BestOf(k=3))
    logs = {p: p.stat().st_size for p in out.glob("arms/*/runs/*/events.jsonl")}
    grades = (out / "grades.jsonl").read_text()
    chosen = (out / "arms/B1/chosen.json").read_text()
    _, again = _run(tmp_path, BestOf(k=3))
    assert {p: p.stat().st_size for p in out.glob("arms/*/runs/*/events.jsonl")} == logs
    assert (out / "grades.jsonl").read_text() == grades
    assert (out / "arms/B1/chosen.json").read_text() == chosen
    b1 = next(a for a in again.arms if a.name == "B1")
    assert b1.rows[0].tokens_by_agent["solver"] == b1.rows[0].tokens  # all k, per agent too
    seeds = again.json()["seeds"]["arms"]
    assert seeds["B1"]["cost_per_task"] == pytest.approx(sum(r.cost for r in b1.rows) / 2)


def test_the_candidates_take_their_arms_place_in_the_seeded_order(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, BestOf(k=3))
    record = json.loads((out / "experiment.json").read_text())
    order = record["order"]
    drawn = run_order(["B0", "B1"], ["q1", "q2"], 1, record["seed"])
    expanded = [
        text
        for key in drawn
        for text in (
            [f"B1.c{c}/{key.task}/r1" for c in (1, 2, 3)] if key.arm == "B1" else [key.text]
        )
    ]
    assert order == expanded  # the declared arms' draw, B1's place taken by c1, c2, c3
    for c in (1, 2, 3):  # each candidate a batch of its own, every run of it once
        lines = (out / f"arms/B1.c{c}/results.jsonl").read_text().splitlines()
        assert len(lines) == 2
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    assert sorted(g["arm"] for g in grades) == sorted(
        ["B0", "B1"] * 2 + ["B1.c1", "B1.c2", "B1.c3"] * 2
    )
    for task in ("q1", "q2"):  # the choice comes after its k candidates' grades
        at = [i for i, g in enumerate(grades) if g["task"] == task and g["arm"].startswith("B1")]
        assert grades[at[-1]]["arm"] == "B1"


def test_a_choice_a_stopped_call_left_is_made_by_the_next_paying_for_nothing(
    tmp_path: Path,
) -> None:
    out, _ = _run(tmp_path, BestOf(k=3))
    logs = {p: p.stat().st_size for p in out.glob("arms/*/runs/*/events.jsonl")}
    lines = (out / "grades.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["arm"] != "B1"]
    (out / "grades.jsonl").write_text("".join(f"{line}\n" for line in kept))
    (out / "arms/B1/chosen.json").unlink()  # stopped after the candidates' grades
    _, report = _run(tmp_path, BestOf(k=3))
    assert {p: p.stat().st_size for p in out.glob("arms/*/runs/*/events.jsonl")} == logs
    assert json.loads((out / "arms/B1/chosen.json").read_text()) == {"B1/q1/r1": 3, "B1/q2/r1": 3}
    assert {a.name: a.passed.k for a in report.arms} == {"B0": 0, "B1": 2}


def test_a_changed_k_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    _run(tmp_path, BestOf(k=3))
    with pytest.raises(ConfigError, match="records another experiment"):
        _run(tmp_path, BestOf(k=2))


def test_the_candidates_derived_ids_are_checked_too() -> None:
    experiment = Experiment(
        name="ids", tasks="tasks.jsonl", grader=FunctionGrader(fn=lambda task, result: True),
        arms=[Arm(name="B0", flow=solve, reference=True),
              Arm(name="B1", flow=solve, best_of=BestOf(k=2))],
    )  # fmt: skip
    task = ExperimentTask(id="q1", inputs={"question": "q1"})
    keys = {key.text for key in _all_keys(experiment, [task])}
    assert keys == {"B0/q1/r1", "B1/q1/r1", "B1.c1/q1/r1", "B1.c2/q1/r1"}


def test_grading_again_grades_the_candidates_and_the_oracle_chooses_again(
    tmp_path: Path,
) -> None:
    out, _ = _run(tmp_path, BestOf(k=3))
    first_wrong = FunctionGrader(fn=lambda task, result: result.output == "wrong 1")
    again = anyio.run(lambda: regrade_experiment(out, grader=first_wrong))
    assert again.graded == 2 + 2 * 3  # B0's runs and B1's candidates' runs
    assert json.loads((out / "arms/B1/chosen.json").read_text()) == {"B1/q1/r1": 1, "B1/q2/r1": 1}
    report = read_experiment(out)
    assert {a.name: a.passed.k for a in report.arms} == {"B0": 2, "B1": 2}
    b1 = next(a for a in report.arms if a.name == "B1")
    assert all(r.run_dir.endswith(f"arms/B1.c1/runs/q{i}-r1") for i, r in
               enumerate(b1.rows, 1))  # fmt: skip


def test_the_view_follows_a_best_of_arm_through_its_candidates(tmp_path: Path) -> None:
    from swarmflow.view.experimentstate import read_experiment_state
    from swarmflow.view.runstate import StateCache

    out, _ = _run(tmp_path, BestOf(k=3))
    state = read_experiment_state(out, StateCache(), str)
    b1 = next(p for p in state.progress if p.name == "B1")
    assert (b1.finished, b1.graded, b1.resolved) == (2, 2, 2) and state.done
    assert all("arms/B1.c3/runs/" in cell.view_key for cell in state.runs(arm="B1"))
    lines = (out / "grades.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["arm"] != "B1"]
    (out / "grades.jsonl").write_text("".join(f"{line}\n" for line in kept))
    (out / "arms/B1/chosen.json").unlink()  # the candidates run, the choice not made yet
    state = read_experiment_state(out, StateCache(), str)
    b1 = next(p for p in state.progress if p.name == "B1")
    assert (b1.started, b1.finished, b1.graded) == (2, 2, 0) and not state.done


_REGRADE = """
import sys, anyio
from swarmflow.core.errors import ConfigError
from swarmflow.experiments import FunctionGrader, regrade_experiment
grader = FunctionGrader(fn=lambda task, result: result.output == "right")
try:
    anyio.run(lambda: regrade_experiment(sys.argv[1], grader=grader))
except ConfigError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""


def test_forged_choice_and_candidate_results_are_read_by_the_one_reader(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    out, _ = _run(tmp_path, BestOf(k=3))
    chosen = out / "arms/B1/chosen.json"
    chosen.write_text('{"B1/q1/r1": "x", "B1/q2/r1": [1]}')  # forged: chosen again
    script = [sys.executable, "-c", _REGRADE, str(out)]
    done = subprocess.run(script, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(chosen.read_text()) == {"B1/q1/r1": 3, "B1/q2/r1": 3}
    results = out / "arms/B1.c2/results.jsonl"
    results.unlink()
    os.mkfifo(results)  # a FIFO where a candidate's results should be: one line, no hang
    done = subprocess.run(script, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("must be a regular file, not a FIFO (named pipe)")
    assert str(results) in done.stderr
