"""Per-arm figures of an experiment, and each arm against the reference, paired by task.

Pairs are (task, repeat): a run of the arm and the reference's run of the same task and
repeat. ITT is the arm's Pass@1 less the reference's over the pairs; the adherence-adjusted
effect (CACE, OpenCollab's Table 4) is ITT divided by the arm's adherence, with its
sensitivity to the unverified runs: counted as not adherent (the point estimate) or as
adherent. The paired differences over adherent and non-adherent runs are OpenCollab's Table 6
columns, and ITT = adherence x (paired, adherent) + (1 - adherence) x (paired, not).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from statistics import fmean

from swarmflow.experiments.layout import ArmRecord, Manifest
from swarmflow.experiments.rows import Row
from swarmflow.experiments.runread import AXES, END_REASONS
from swarmflow.experiments.stats import clopper_pearson, sign_test

Interval = tuple[float, float]


@dataclass(frozen=True)
class Share:
    """k of n, with its exact 95% interval."""

    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else 0.0

    @property
    def interval(self) -> Interval:
        return clopper_pearson(self.k, self.n) if self.n else (0.0, 1.0)


@dataclass(frozen=True)
class Paired:
    """The arm against the reference over the pairs both ran."""

    both: int
    only_arm: int
    only_reference: int
    neither: int
    p: float
    itt: float
    cace: float | None
    cace_range: Interval | None
    """CACE with unverified runs counted as adherent, and as not: a sensitivity, not a CI."""
    paired_adherent: float | None
    paired_not_adherent: float | None
    adherent_pairs: int
    not_adherent_pairs: int


@dataclass
class ArmSummary:
    """Everything the report says about one arm."""

    record: ArmRecord
    rows: list[Row]
    expected: int
    passed: Share = field(init=False)
    adherence: Share = field(init=False)
    unverified: Share = field(init=False)
    axes: dict[str, Share] = field(init=False)
    paired: Paired | None = None

    def __post_init__(self) -> None:
        n = len(self.rows)
        self.passed = Share(sum(r.resolved for r in self.rows), n)
        self.adherence = Share(sum(r.adherent for r in self.rows), n)
        self.unverified = Share(sum(r.unverified for r in self.rows), n)
        self.axes = {}
        for axis in AXES:
            held = [getattr(r, axis.replace(" ", "_")) for r in self.rows]
            judged = [h for h in held if h is not None]
            if judged:
                self.axes[axis] = Share(sum(judged), len(judged))

    @property
    def name(self) -> str:
        return self.record.name

    def output_modes(self) -> dict[str, int]:
        """Runs per set of forms their model calls asked of the servers (none: left out)."""
        counts: dict[str, int] = {}
        for row in self.rows:
            if row.output_modes:
                counts[row.output_modes] = counts.get(row.output_modes, 0) + 1
        return dict(sorted(counts.items()))

    @property
    def rubric_rate(self) -> float | None:
        items = sum(r.rubric_items for r in self.rows)
        return sum(r.rubric_passed for r in self.rows) / items if items else None

    def mean(self, name: str) -> float:
        return fmean(float(getattr(r, name)) for r in self.rows) if self.rows else 0.0

    @property
    def cache_share(self) -> float | None:
        prompt = sum(r.tokens_in for r in self.rows)
        return sum(r.cached_tokens for r in self.rows) / prompt if prompt else None

    def per_agent(self, name: str) -> dict[str, float]:
        """The mean over runs of a per-agent figure (`tokens_by_agent`, ...)."""
        totals: Counter[str] = Counter()
        for r in self.rows:
            totals.update(getattr(r, name))
        return {a: v / len(self.rows) for a, v in totals.items()} if self.rows else {}

    def ends(self) -> dict[str, float]:
        counts = Counter(r.end_reason for r in self.rows)
        n = len(self.rows) or 1
        return {reason: counts.get(reason, 0) / n for reason in END_REASONS}

    def shares(self) -> dict[str, list[float]]:
        """Each agent's token share per tenth, averaged over the runs that drew tokens in
        that tenth (so each tenth with any call sums to 1)."""
        summed: dict[str, list[float]] = {}
        for r in self.rows:
            for agent, row in r.shares.items():
                into = summed.setdefault(agent, [0.0] * len(row))
                for i, v in enumerate(row):
                    into[i] += v
        width = max((len(row) for row in summed.values()), default=0)
        totals = [sum(row[i] for row in summed.values() if i < len(row)) for i in range(width)]
        return {
            a: [v / totals[i] if totals[i] else 0.0 for i, v in enumerate(row)]
            for a, row in sorted(summed.items())
        }


def summarize(manifest: Manifest, rows: list[Row]) -> list[ArmSummary]:
    """One summary per arm, in declaration order, each compared with the reference."""
    expected = len(manifest.tasks) * manifest.repeats
    arms = [ArmSummary(a, [r for r in rows if r.arm == a.name], expected) for a in manifest.arms]
    reference = next(s for s in arms if s.record.reference)
    for arm in arms:
        if arm is not reference:
            arm.paired = paired(arm.rows, reference.rows)
    return arms


def paired(arm: list[Row], reference: list[Row]) -> Paired:
    """The arm against the reference, over the (task, repeat) pairs both have a row for."""
    theirs = {(r.task, r.repeat): r for r in reference}
    pairs = [(r, theirs[(r.task, r.repeat)]) for r in arm if (r.task, r.repeat) in theirs]
    counts = Counter((a.resolved, b.resolved) for a, b in pairs)
    only_arm, only_ref = counts[(True, False)], counts[(False, True)]
    diffs = [int(a.resolved) - int(b.resolved) for a, b in pairs]
    itt = fmean(diffs) if diffs else 0.0
    n = len(pairs)
    adherent = sum(a.adherent for a, _ in pairs)
    unverified = sum(a.unverified for a, _ in pairs)
    on = [d for d, (a, _) in zip(diffs, pairs, strict=True) if a.adherent]
    off = [d for d, (a, _) in zip(diffs, pairs, strict=True) if not a.adherent]
    low, high = (adherent / n, (adherent + unverified) / n) if n else (0.0, 0.0)
    cace = itt / low if low else None
    bracket = tuple(sorted((itt / high, itt / low))) if low and high else None
    return Paired(
        counts[(True, True)],
        only_arm,
        only_ref,
        counts[(False, False)],
        sign_test(only_arm, only_ref),
        itt,
        cace,
        bracket,  # type: ignore[arg-type]
        fmean(on) if on else None,
        fmean(off) if off else None,
        len(on),
        len(off),
    )
