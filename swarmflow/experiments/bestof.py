"""Best of k (AgentRadio's B1): k independent runs per task, one result chosen by a named rule.

An arm with `best_of=BestOf(k=6)` runs its flow k times on every task and repeat, each time
as a candidate of its own: candidate `c` is the arm named `<arm>.c<c>`, with its own batch
(`OUT/arms/<arm>.c<c>/`), its own checkouts and its own grade, so the candidates are as
independent as two arms are. Once every candidate of a (task, repeat) is graded, the rule
picks one: `"oracle"` takes the first candidate with the best grade (the grader used as an
oracle, which a deployed system does not have: the report says so), a function
`judge(task, outcomes) -> index` picks by what it sees of the runs. The arm's grade is the
chosen candidate's; its row is the chosen run's, with the spend (tokens, cost, calls, wall
clock) of all k runs, since all k were paid for. `OUT/arms/<arm>/chosen.json` records which
candidate each run took.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swarmflow.batches.results import RESULTS
from swarmflow.core.reading import Unreadable, json_value, lines, read_json
from swarmflow.experiments.grades import Grade
from swarmflow.experiments.grading import RunOutcome
from swarmflow.experiments.layout import ArmRecord, Layout, RunDirs, RunKey

if TYPE_CHECKING:
    from swarmflow.experiments.runread import RunFacts
    from swarmflow.experiments.tasks import ExperimentTask

CHOSEN = "chosen.json"


class BestOf(BaseModel):
    """k independent runs per task; the result chosen by `choose`."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    k: int = Field(ge=2, le=64)
    choose: Literal["oracle"] | Callable[..., object] = "oracle"
    """`"oracle"`: the grader picks (reported as an oracle); or a judge function (or coroutine
    function: one that asks a model, say) given the task and the k candidates' `RunOutcome`s,
    that returns the index of the one to keep."""

    @property
    def rule(self) -> str:
        if self.choose == "oracle":
            return "oracle (the grader)"
        return f"judge {getattr(self.choose, '__name__', type(self.choose).__name__)}"

    def record(self) -> dict[str, object]:
        return {"k": self.k, "rule": self.rule}


def candidate_name(arm: str, c: int) -> str:
    return f"{arm}.c{c}"


def candidates(arm: Any) -> list[Any]:
    """The arm's k candidates: the same arm, each under its own name, run once."""
    assert arm.best_of is not None
    return [
        arm.model_copy(
            update={"name": candidate_name(arm.name, c), "best_of": None, "reference": False}
        )
        for c in range(1, arm.best_of.k + 1)
    ]


async def choose(
    plan: Any, arm: Any, task: ExperimentTask, repeat: int, graded: list[Grade]
) -> tuple[int, Grade]:
    """The candidate `arm`'s rule takes for (`task`, `repeat`), from 1, and the arm's grade:
    the chosen candidate's, with the judge spend of all k (`graded`: the k candidates'
    grades, in candidate order)."""
    k = arm.best_of.k
    if arm.best_of.choose == "oracle":
        best = oracle_pick(graded)
    else:
        outcomes = [_outcome(plan, arm.name, task, repeat, c) for c in range(1, k + 1)]
        picked = arm.best_of.choose(task, outcomes)
        best = int(await picked if inspect.isawaitable(picked) else picked)
        if not 0 <= best < k:
            raise ValueError(f"the judge of arm {arm.name!r} chose {best}, not 0..{k - 1}")
    return best + 1, chosen_grade(arm.name, arm.best_of.rule, best + 1, graded)


def oracle_pick(graded: list[Grade]) -> int:
    """The index (from 0) of the first candidate with the best grade."""
    return max(range(len(graded)), key=lambda i: (graded[i].resolved, graded[i].score, -i))


def chosen_grade(arm: str, rule: str, candidate: int, graded: list[Grade]) -> Grade:
    """The arm's grade: candidate `candidate`'s (from 1), with the judge spend of all k."""
    pick = graded[candidate - 1]
    note = f"best of {len(graded)} by {rule}: candidate {candidate}; {pick.note}"
    return pick.model_copy(
        update={
            "arm": arm,
            "note": note,
            "judge_tokens": sum(g.judge_tokens for g in graded),
            "judge_cost": sum(g.judge_cost for g in graded),
        }
    )


def record_choice(layout: Layout, arm: str, key: RunKey, candidate: int) -> None:
    """Add the choice for `key` to the arm's `chosen.json` (read and replaced at once)."""
    chosen = read_chosen(layout, arm)
    chosen[key.text] = candidate
    _write_chosen(layout, arm, chosen)


def _outcome(plan: Any, arm: str, task: ExperimentTask, repeat: int, c: int) -> RunOutcome:
    layout: Layout = plan.layout
    key = RunKey(candidate_name(arm, c), task.id, repeat)
    run_dir = plan.dirs(key)
    line = _result_line(layout.arm(key.arm), run_dir)
    return RunOutcome(
        key,
        line.get("status", "failed"),
        line.get("output"),
        line.get("error"),
        run_dir,
        layout.checkout(key) if task.repo else None,
    )


def _result_line(batch_dir: Path, run_dir: Path) -> dict[str, Any]:
    """The candidate batch's result line for `run_dir`, read by the one reader (a forged
    `results.jsonl`, such as a FIFO, is one line, never a hang); {} when it has none."""
    path = batch_dir / RESULTS
    if not path.exists():
        return {}
    for _number, line in lines(path, "a batch's results"):
        try:
            found = json_value(line)
        except (ValueError, UnicodeDecodeError):  # a line that is not JSON is no result
            continue
        if isinstance(found, dict) and found.get("run_dir") == str(run_dir):
            return found
    return {}


def read_chosen(layout: Layout, arm: str) -> dict[str, int]:
    """The best-of choices recorded for `arm`; {} when none are (or the file is not a
    readable choice: the arm then chooses again)."""
    try:
        found = read_json(layout.arm(arm) / CHOSEN, "a best-of choice")
    except Unreadable:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def _write_chosen(layout: Layout, arm: str, chosen: dict[str, int]) -> None:
    folder = layout.arm(arm)
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f"{CHOSEN}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(chosen, indent=1, sort_keys=True), encoding="utf-8")
    temporary.replace(folder / CHOSEN)


def chosen_run(dirs: RunDirs, arm: ArmRecord, key: RunKey) -> Path | None:
    """The run directory of the candidate a best-of arm's run took; None before the choice."""
    candidate = read_chosen(dirs.layout, arm.name).get(key.text)
    if candidate is None:
        return None
    return dirs(RunKey(candidate_name(arm.name, candidate), key.task, key.repeat))


def candidate_runs(dirs: RunDirs, arm: ArmRecord, key: RunKey) -> list[Path]:
    k = int((arm.best_of or {}).get("k", 0))
    names = [candidate_name(arm.name, c) for c in range(1, k + 1)]
    return [dirs(RunKey(name, key.task, key.repeat)) for name in names]


def with_all_spend(row: Any, runs: list[Path], read: Callable[[Path], RunFacts]) -> Any:
    """The chosen run's row with the spend of every candidate run: tokens (per agent too),
    cost, calls and wall clock are what all k cost (`read` folds a run, as the rows do)."""
    from dataclasses import replace

    totals: dict[str, Any] = {
        "tokens": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cached_tokens": 0,
        "tokens_replayed": 0,
        "tokens_repaid": 0,
        "cost": 0.0,
        "calls": 0,
        "wall": 0.0,
    }
    by_agent: dict[str, int] = {}
    for run_dir in runs:
        digest = read(run_dir).digest
        for agent, spent in digest.by_agent().items():
            by_agent[agent] = by_agent.get(agent, 0) + spent.tokens_in + spent.tokens_out
        total = digest.total()
        totals["tokens"] += total.tokens_in + total.tokens_out
        totals["tokens_in"] += total.tokens_in
        totals["tokens_out"] += total.tokens_out
        totals["cached_tokens"] += total.tokens_cached
        totals["tokens_replayed"] += digest.tokens_by_payment.get("replayed", 0)
        totals["tokens_repaid"] += digest.tokens_by_payment.get("repaid", 0)
        totals["cost"] += total.cost
        totals["calls"] += total.calls
        totals["wall"] += digest.seconds
    return replace(row, **totals, tokens_by_agent=by_agent)
