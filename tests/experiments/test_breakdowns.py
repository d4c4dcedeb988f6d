"""The seeds' tables: McNemar per ladder step, churn, weighted and macro rates, noise and the
per-tag breakdown, against scipy and against cases worked by hand (ties and empty cells)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import anyio
import pytest
from scipy.stats import binomtest

from swarmflow import Agent, Team, agent, flow
from swarmflow.experiments import Arm, Experiment, FunctionGrader, read_experiment, run_experiment
from swarmflow.experiments.breakdowns import (
    Noise,
    ladder_steps,
    macro_rate,
    mcnemar_exact,
    noise,
    order_holds,
    tag_groups,
    weighted_rate,
)
from swarmflow.experiments.rows import Row
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import write_tasks


def _row(arm: str, task: str, repeat: int, resolved: bool, **more: Any) -> Row:
    values: dict[str, Any] = {
        "score": float(resolved), "rubric_passed": 0, "rubric_items": 0, "adherent": True,
        "unverified": False, "participation": None, "delegation": None, "role_boundary": None,
        "budget_sharing": None, "information_flow": None, "context_policy": None, "tokens": 0,
        "tokens_replayed": 0, "tokens_repaid": 0,
        "tokens_in": 0, "tokens_out": 0, "cached_tokens": 0, "cost": 0.0, "calls": 0,
        "wall": 0.0, "model_seconds": 0.0, "tool_seconds": 0.0, "engine_seconds": 0.0,
        "end_reason": "completed", "status": "ok", "model": "m", "allowance": None,
        "wall_limit": None, "judge_tokens": 0, "judge_cost": 0.0, "tokens_by_agent": {},
        "model_seconds_by_agent": {}, "tool_seconds_by_agent": {}, "run_dir": "",
    }  # fmt: skip
    return Row(arm=arm, task=task, repeat=repeat, resolved=resolved, **{**values, **more})


@pytest.mark.parametrize(("gained", "lost"), [(0, 0), (1, 0), (5, 0), (6, 1), (3, 3), (2, 9)])
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs(gained: int, lost: int) -> None:
    expected = 1.0 if gained + lost == 0 else binomtest(gained, gained + lost, 0.5).pvalue
    assert mcnemar_exact(gained, lost) == pytest.approx(expected)


def test_mcnemar_by_hand() -> None:
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)  # 2 * (1/2)^5
    assert mcnemar_exact(6, 1) == pytest.approx(2 * 8 / 128)  # 2 * P(X <= 1), X ~ B(7, 1/2)
    assert mcnemar_exact(3, 3) == 1.0  # a tie of discordant pairs is no evidence
    assert mcnemar_exact(0, 0) == 1.0  # an empty cell: no discordant pair at all


def test_a_ladder_pairs_each_step_by_task_and_repeat() -> None:
    rows = [
        *(_row("B0", t, 1, ok) for t, ok in [("a", False), ("b", True), ("c", False), ("d", True)]),
        *(_row("L1", t, 1, ok) for t, ok in [("a", True), ("b", True), ("c", True), ("d", False)]),
        # L2 ran no "d": that pair is left out of the step, not counted as a loss
        *(_row("L2", t, 1, ok) for t, ok in [("a", True), ("b", False), ("c", True)]),
    ]
    first, second = ladder_steps(rows, ["B0", "L1", "L2"])
    assert (first.lower, first.upper) == ("B0", "L1")
    assert (first.both, first.gained, first.lost, first.neither) == (
        1,
        (("a", 1), ("c", 1)),
        (("d", 1),),
        0,
    )
    assert first.p == pytest.approx(binomtest(2, 3, 0.5).pvalue) == pytest.approx(1.0)
    assert (second.pairs, second.both, second.gained, second.lost, second.neither) == (
        3,
        2,
        (),
        (("b", 1),),
        0,
    )
    (lonely,) = ladder_steps(rows, ["B0", "nobody"])  # an arm with no run: an empty step
    assert (lonely.pairs, lonely.p) == (0, 1.0)


def test_weighted_and_macro_rates_by_hand_with_empty_cells() -> None:
    assert weighted_rate([(3, 4), (0, 0), (1, 2)]) == pytest.approx(4 / 6)
    assert weighted_rate([]) is None and weighted_rate([(0, 0)]) is None
    groups = {"repo-a": [(3, 4)], "repo-b": [(1, 2), (1, 2)], "empty": []}
    assert macro_rate(groups) == pytest.approx((3 / 4 + 2 / 4) / 2)  # the empty repo left out
    assert macro_rate({"x": [(0, 0)]}) is None
    # weighted and macro differ when repositories differ in size (STORM's Table)
    sizes = {"big": [(90, 100)], "small": [(0, 10)]}
    assert weighted_rate(c for v in sizes.values() for c in v) == pytest.approx(90 / 110)
    assert macro_rate(sizes) == pytest.approx(0.45)
    with pytest.raises(ValueError, match="0 <= passed <= total"):
        weighted_rate([(5, 4)])


def test_the_noise_table_and_whether_the_order_holds() -> None:
    results = {  # arm -> its resolved tasks out of 4, per repeat
        "L3": [4, 3, 4],
        "L2": [2, 3, 1],
        "B0": [1, 1, 1],
    }
    rows = [
        _row(arm, f"t{i}", repeat, i < k)
        for arm, ks in results.items() for repeat, k in enumerate(ks, 1) for i in range(4)
    ]  # fmt: skip
    spread = {n.arm: n for n in noise(rows, list(results))}
    for arm, ks in results.items():
        rates = [k / 4 for k in ks]
        assert spread[arm].rates == tuple(rates)
        assert (spread[arm].low, spread[arm].middle, spread[arm].high) == (
            min(rates),
            statistics.median(rates),
            max(rates),
        )
    # L3 > L2 > B0 by median; in repeat 2 L3 and L2 tie (3 and 3): a tie keeps the order
    assert order_holds(list(spread.values())) == (3, 3)
    swapped = [Noise("x", (0.5, 0.2)), Noise("y", (0.25, 0.3)), Noise("z", (0.1, 0.1))]
    assert order_holds(swapped) == (1, 2)  # y beats x in the second repeat
    assert order_holds([Noise("x", (0.5,)), Noise("y", (0.5,))]) == (1, 1)  # equal: unordered
    assert order_holds([]) == (0, 0)


def test_tags_group_tasks_into_buckets_per_key() -> None:
    groups = tag_groups({"t1": ["category:bug", "duration:short"], "t2": ["category:bug"],
                         "t3": ["category:feature", "flaky"]})  # fmt: skip
    assert groups == {
        "category": {"bug": ["t1", "t2"], "feature": ["t3"]},
        "duration": {"short": ["t1"]},
        "tag": {"flaky": ["t3"]},
    }


# the tables in a report, end to end -------------------------------------------------------


@flow(team=Team([Agent("solver")]))
async def solve(question: str) -> str:
    return (await agent("solver", question)).text


def _solver(good: set[str]) -> Any:
    """Answers right on the questions in `good` (scripted: the arms differ by design)."""
    return lambda: FunctionModel(
        lambda r: "right" if any(g in r.prompt for g in good) else "wrong", name="solver-s"
    )


def _grade(task: Any, result: Any) -> float:
    return 1.0 if result.output == "right" else 0.25


def test_the_report_prints_the_ladder_churn_tags_rates_and_noise(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "q1", "inputs": {"question": "q1"}, "tags": ["category:bug", "repo:a"],
         "data": {"tests": 4}},
        {"id": "q2", "inputs": {"question": "q2"}, "tags": ["category:bug", "repo:a"],
         "data": {"tests": 4}},
        {"id": "q3", "inputs": {"question": "q3"}, "tags": ["category:feature", "repo:b"],
         "data": {"tests": 8}},
    ])  # fmt: skip
    experiment = Experiment(
        name="ladder", tasks=tasks, repeats=2, ladder=("B0", "L1", "L2"),
        grader=FunctionGrader(fn=_grade),
        arms=[
            Arm(name="B0", flow=solve, reference=True, demo=_solver({"q1"})),
            Arm(name="L1", flow=solve, demo=_solver({"q1", "q2", "q3"})),
            Arm(name="L2", flow=solve, demo=_solver({"q2", "q3"})),
        ],
    )  # fmt: skip
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    report = read_experiment(out)
    text = report.text()
    assert "B0 -> L1      6     2       4     0        0  0.125" in text
    assert "L1 -> L2      6     4       0     2        0  0.500" in text
    assert "L1 -> L2: gained none; lost -q1/r1, -q1/r2" in text
    assert "Task accuracy by category" in text and "bug" in text
    assert "arm order (by median): holds in every repeat" in text
    seeds = report.json()["seeds"]
    # B0: q1 all 4 tests, q2 1 of 4, q3 2 of 8 -> weighted 7/16; macro (5/8 + 2/8) / 2
    assert seeds["arms"]["B0"]["weighted_rate"] == pytest.approx(14 / 32)
    assert seeds["arms"]["B0"]["macro_rate"] == pytest.approx((5 / 8 + 2 / 8) / 2)
    assert seeds["by_tag"]["category"]["bug"] == {"B0": [2, 4], "L1": [4, 4], "L2": [2, 4]}
    assert seeds["noise"]["order_holds"] == [2, 2]
    assert [s["p"] for s in seeds["ladder"]] == [pytest.approx(0.125), pytest.approx(0.5)]
