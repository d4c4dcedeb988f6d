"""The seeds' other tables, computed from an experiment's rows.

- a ladder (AgentRadio's B0 -> B1 -> L1 -> L2 -> L3): each arm against the one before it,
  paired by (task, repeat), with McNemar's exact test and the tasks the step gains and loses
  (its Figure 4's churn);
- a breakdown by a task field (`tags`: `category:debugging`, `duration:long`), per arm
  (openJiuwen's Tables 3 and 4);
- weighted and macro pass rates over items graded by a count (tests passed of tests run, or
  rubric items): STORM's weighted rate is every passed item over every item, its macro rate
  the mean of each group's (repository's) own rate;
- the run-to-run noise when an experiment has repeats (AgentRadio's Table 3): each arm's pass
  rate per repeat, its min, median and max, and whether the order of the arms holds in every
  repeat.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median

from swarmflow.experiments.rows import Row
from swarmflow.experiments.stats import sign_test

Pair = tuple[str, int]
"""(task, repeat): what two arms' runs are paired by."""


@dataclass(frozen=True)
class Step:
    """One step of a ladder: `upper` against `lower`, over the pairs both have."""

    lower: str
    upper: str
    both: int
    gained: tuple[Pair, ...]
    """Pairs the upper arm resolved and the lower did not."""
    lost: tuple[Pair, ...]
    neither: int
    p: float
    """McNemar's exact test (two-sided) on the discordant pairs; 1 with none."""

    @property
    def pairs(self) -> int:
        return self.both + len(self.gained) + len(self.lost) + self.neither


def mcnemar_exact(gained: int, lost: int) -> float:
    """McNemar's exact test: the two-sided binomial test of the discordant pairs at 1/2
    (concordant pairs carry no information and are not counted)."""
    return sign_test(gained, lost)


def ladder_steps(rows: Sequence[Row], ladder: Sequence[str]) -> list[Step]:
    """Each consecutive pair of `ladder`'s arms, paired by (task, repeat)."""
    by_arm: dict[str, dict[Pair, bool]] = defaultdict(dict)
    for r in rows:
        by_arm[r.arm][(r.task, r.repeat)] = r.resolved
    steps = []
    for lower, upper in zip(ladder, ladder[1:], strict=False):
        low, high = by_arm.get(lower, {}), by_arm.get(upper, {})
        common = sorted(set(low) & set(high))
        gained = tuple(p for p in common if high[p] and not low[p])
        lost = tuple(p for p in common if low[p] and not high[p])
        both = sum(low[p] and high[p] for p in common)
        neither = len(common) - both - len(gained) - len(lost)
        steps.append(
            Step(lower, upper, both, gained, lost, neither, mcnemar_exact(len(gained), len(lost)))
        )
    return steps


def weighted_rate(counts: Iterable[tuple[int, int]]) -> float | None:
    """Every passed item over every item: `sum(passed) / sum(total)`; None with no item."""
    passed = total = 0
    for p, t in counts:
        _check_count(p, t)
        passed, total = passed + p, total + t
    return passed / total if total else None


def macro_rate(groups: dict[str, list[tuple[int, int]]]) -> float | None:
    """The mean of each group's weighted rate; a group with no item has no rate and is left
    out (an empty cell does not count as 0); None when no group has one."""
    rates = [r for r in (weighted_rate(c) for c in groups.values()) if r is not None]
    return sum(rates) / len(rates) if rates else None


def _check_count(passed: int, total: int) -> None:
    if total < 0 or not 0 <= passed <= total:
        raise ValueError(f"a count is passed of total, 0 <= passed <= total; got {passed}/{total}")


@dataclass(frozen=True)
class Noise:
    """An arm's pass rate in each repeat, and its spread."""

    arm: str
    rates: tuple[float, ...]

    @property
    def low(self) -> float:
        return min(self.rates)

    @property
    def middle(self) -> float:
        return float(median(self.rates))

    @property
    def high(self) -> float:
        return max(self.rates)


def noise(rows: Sequence[Row], arms: Sequence[str]) -> list[Noise]:
    """Each arm's pass rate per repeat (repeats with no row of the arm are left out)."""
    out = []
    for arm in arms:
        per: dict[int, list[bool]] = defaultdict(list)
        for r in rows:
            if r.arm == arm:
                per[r.repeat].append(r.resolved)
        rates = tuple(sum(v) / len(v) for _, v in sorted(per.items()))
        if rates:
            out.append(Noise(arm, rates))
    return out


def order_holds(spread: Sequence[Noise]) -> tuple[int, int]:
    """In how many repeats (of those every arm has) the arms keep the order of their median
    rates: an arm ranked above another never has a lower rate in that repeat. Arms with
    equal medians are not ordered, and a tie in a repeat does not break the order."""
    if not spread:
        return 0, 0
    repeats = min(len(n.rates) for n in spread)
    ranked = sorted(spread, key=lambda n: -n.middle)
    held = 0
    for i in range(repeats):
        held += all(
            a.rates[i] >= b.rates[i]
            for j, a in enumerate(ranked)
            for b in ranked[j + 1 :]
            if a.middle > b.middle
        )
    return held, repeats


def tag_groups(tags: dict[str, list[str]]) -> dict[str, dict[str, list[str]]]:
    """Breakdown -> bucket -> its tasks. A tag `key:value` is bucket `value` of breakdown
    `key`; a tag without a colon is a bucket of the breakdown `tag`."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for task, found in tags.items():
        for tag in found:
            key, _, value = tag.partition(":") if ":" in tag else ("tag", "", tag)
            out[key][value].append(task)
    return {k: dict(v) for k, v in out.items()}


def bucket_passes(rows: Sequence[Row], arm: str, tasks: Iterable[str]) -> tuple[int, int]:
    """(resolved, runs) of `arm` over the runs of `tasks`."""
    wanted = set(tasks)
    runs = [r.resolved for r in rows if r.arm == arm and r.task in wanted]
    return sum(runs), len(runs)


def churn_counts(steps: Sequence[Step]) -> dict[str, Counter[str]]:
    """Per step (`lower->upper`), how many of each task's pairs it gained (+) and lost (-)."""
    out: dict[str, Counter[str]] = {}
    for s in steps:
        counts: Counter[str] = Counter()
        for task, _ in s.gained:
            counts[task] += 1
        for task, _ in s.lost:
            counts[task] -= 1
        out[f"{s.lower}->{s.upper}"] = counts
    return out
