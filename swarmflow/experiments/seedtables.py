"""The seeds' other tables as text and JSON, beside the report's own (`breakdowns`).

Shown when they apply: the per-arm accuracy table always (task accuracy and rubric pass rate,
weighted and macro rates where tasks are graded by a count, cost per task, cache hits, factors
realized), the ladder and its churn when the experiment declares `ladder=[...]`, a breakdown
per task tag key when tasks have `tags`, and the noise table when it has repeats.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

from swarmflow.experiments.breakdowns import (
    Step,
    bucket_passes,
    ladder_steps,
    macro_rate,
    noise,
    order_holds,
    tag_groups,
    weighted_rate,
)
from swarmflow.experiments.layout import Manifest
from swarmflow.experiments.rows import Row
from swarmflow.experiments.summary import ArmSummary
from swarmflow.report._format import table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def counts_of(rows: list[Row], manifest: Manifest) -> list[tuple[str, int, int]]:
    """(group, passed, items) of every run graded by a count: its score times the task's
    items (rubric items, or `data.tests`); the group is the task's `repo:` tag, else it."""
    out = []
    for r in rows:
        items = manifest.items.get(r.task) or r.rubric_items
        if items:
            out.append((_group(r.task, manifest), round(r.score * items), items))
    return out


def _group(task: str, manifest: Manifest) -> str:
    for tag in manifest.tags.get(task, []):
        if tag.startswith("repo:"):
            return tag[5:]
    return task


def rates(rows: list[Row], manifest: Manifest) -> tuple[float | None, float | None]:
    """The weighted and the macro pass rate of these runs."""
    counts = counts_of(rows, manifest)
    groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for group, passed, items in counts:
        groups[group].append((passed, items))
    return weighted_rate((p, t) for _, p, t in counts), macro_rate(groups)


def render_seed_tables(manifest: Manifest, arms: list[ArmSummary]) -> list[str]:
    """The sections that apply, each a title line and its table."""
    rows = [r for a in arms for r in a.rows]
    parts = [
        "Accuracy, rates and cost per arm (task accuracy: every item passed; weighted: "
        "passed items over all items; macro: the mean of each repository's rate)\n"
        + _accuracy(manifest, arms)
    ]
    if manifest.ladder:
        steps = ladder_steps(rows, manifest.ladder)
        parts.append(
            "Ladder: each step against the one before, paired by task and repeat "
            "(McNemar's exact test on the discordant pairs)\n" + _ladder(steps, arms)
        )
        parts.append("Churn: the tasks each step gains (+) and loses (-)\n" + _churn(steps))
    for key, buckets in sorted(tag_groups(manifest.tags).items()):
        parts.append(
            f"Task accuracy by {key} (resolved/runs, %; rubric pass rate %)\n"
            + _buckets(rows, buckets, arms)
        )
    if manifest.repeats > 1:
        parts.append("Run-to-run noise: task accuracy % per repeat\n" + _noise(rows, arms))
    return parts


def _accuracy(manifest: Manifest, arms: list[ArmSummary]) -> str:
    lines: list[tuple[str, ...]] = [
        (
            "arm",
            "runs",
            "task acc %",
            "rubric %",
            "weighted %",
            "macro %",
            "cost/task $",
            "tokens/task",
            "cache hit %",
            "factors realized",
        )
    ]
    for a in arms:
        weighted, macro = rates(a.rows, manifest)
        best = a.record.best_of
        name = f"{a.name} (best of {best['k']}, {best['rule']})" if best else a.name
        lines.append(
            (
                name,
                str(len(a.rows)),
                _pct(a.passed.value if a.rows else None),
                _pct(a.rubric_rate),
                _pct(weighted),
                _pct(macro),
                _cost_per_task(a.rows),
                f"{a.mean('tokens'):,.0f}" if a.rows else "-",
                _cache(a),
                _factors(a.rows),
            )
        )
    return table(lines, right=tuple(range(1, 9)))


def cost_per_task(rows: list[Row]) -> float | None:
    """What one attempt at a task cost, on average over the arm's runs (a best-of-k arm's
    row holds the spend of all k runs, so its attempt is the k runs)."""
    return sum(r.cost for r in rows) / len(rows) if rows else None


def _cost_per_task(rows: list[Row]) -> str:
    cost = cost_per_task(rows)
    return "-" if cost is None else f"{cost:.4f}"


def _cache(arm: ArmSummary) -> str:
    """The cached share of the prompt tokens, where the server reported any cached token."""
    if not any(r.cached_tokens for r in arm.rows):
        return "n/r"
    return _pct(arm.cache_share)


def _realized(rows: list[Row]) -> dict[str, float]:
    """Factor -> the share of the arm's runs that showed it."""
    held: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        for name, ok in r.factors.items():
            held[name].append(ok)
    return {name: fmean(values) for name, values in held.items()}


def _factors(rows: list[Row]) -> str:
    return ", ".join(f"{n} {_pct(v)}%" for n, v in _realized(rows).items()) or "-"


def _ladder(steps: list[Step], arms: list[ArmSummary]) -> str:
    by_name = {a.name: a for a in arms}
    lines: list[tuple[str, ...]] = [
        (
            "step",
            "pairs",
            "both",
            "gained",
            "lost",
            "neither",
            "p",
            "acc % (from -> to)",
            "rubric % (from -> to)",
        )
    ]
    for s in steps:
        low, high = by_name.get(s.lower), by_name.get(s.upper)
        acc = " -> ".join(_pct(x.passed.value if x and x.rows else None) for x in (low, high))
        rub = " -> ".join(_pct(x.rubric_rate if x else None) for x in (low, high))
        lines.append(
            (
                f"{s.lower} -> {s.upper}",
                str(s.pairs),
                str(s.both),
                str(len(s.gained)),
                str(len(s.lost)),
                str(s.neither),
                _p(s.p),
                acc,
                rub,
            )
        )
    return table(lines, right=(1, 2, 3, 4, 5, 6))


def _churn(steps: list[Step]) -> str:
    lines = []
    for s in steps:
        gained = ", ".join(f"+{t}/r{r}" for t, r in s.gained) or "none"
        lost = ", ".join(f"-{t}/r{r}" for t, r in s.lost) or "none"
        lines.append(f"  {s.lower} -> {s.upper}: gained {gained}; lost {lost}")
    return "\n".join(lines) or "  (a ladder of one arm has no step)"


def _buckets(rows: list[Row], buckets: dict[str, list[str]], arms: list[ArmSummary]) -> str:
    lines: list[tuple[str, ...]] = [("bucket", "tasks", *(a.name for a in arms))]
    for bucket, tasks in sorted(buckets.items()):
        cells = []
        for a in arms:
            k, n = bucket_passes(rows, a.name, tasks)
            rubric = _rubric_rate([r for r in rows if r.arm == a.name and r.task in tasks])
            shown = f"{k}/{n} ({_pct(k / n)})" if n else "-"
            cells.append(shown + (f" rubric {_pct(rubric)}" if n and rubric is not None else ""))
        lines.append((bucket, str(len(tasks)), *cells))
    return table(lines, right=(1,))


def _rubric_rate(rows: list[Row]) -> float | None:
    items = sum(r.rubric_items for r in rows)
    return sum(r.rubric_passed for r in rows) / items if items else None


def _noise(rows: list[Row], arms: list[ArmSummary]) -> str:
    spread = noise(rows, [a.name for a in arms])
    if not spread:
        return "  (no run yet)"
    width = max(len(n.rates) for n in spread)
    lines: list[tuple[str, ...]] = [
        ("arm", *(f"r{i + 1}" for i in range(width)), "min", "median", "max")
    ]
    for n in spread:
        shown = [_pct(x) for x in n.rates] + ["-"] * (width - len(n.rates))
        lines.append((n.arm, *shown, _pct(n.low), _pct(n.middle), _pct(n.high)))
    held, repeats = order_holds(spread)
    verdict = "holds in every repeat" if held == repeats else f"holds in {held} of {repeats}"
    body = table(lines, right=tuple(range(1, width + 4)))
    return f"{body}\n  arm order (by median): {verdict}"


def seed_json(manifest: Manifest, arms: list[ArmSummary]) -> dict[str, object]:
    """The same figures as data."""
    rows = [r for a in arms for r in a.rows]
    per_arm = {}
    for a in arms:
        weighted, macro = rates(a.rows, manifest)
        per_arm[a.name] = {
            "task_accuracy": a.passed.value if a.rows else None,
            "rubric_rate": a.rubric_rate,
            "weighted_rate": weighted,
            "macro_rate": macro,
            "cost_per_task": cost_per_task(a.rows),
            "factors_realized": _realized(a.rows),
            "best_of": a.record.best_of,
            "cache_hit": a.cache_share if any(r.cached_tokens for r in a.rows) else None,
        }
    steps = ladder_steps(rows, manifest.ladder) if manifest.ladder else []
    spread = noise(rows, [a.name for a in arms]) if manifest.repeats > 1 else []
    held, repeats = order_holds(spread)
    return {
        "arms": per_arm,
        "ladder": [
            {
                "from": s.lower,
                "to": s.upper,
                "both": s.both,
                "neither": s.neither,
                "gained": [list(p) for p in s.gained],
                "lost": [list(p) for p in s.lost],
                "p": s.p,
            }
            for s in steps
        ],
        "by_tag": {
            key: {
                b: {a.name: list(bucket_passes(rows, a.name, t)) for a in arms}
                for b, t in buckets.items()
            }
            for key, buckets in tag_groups(manifest.tags).items()
        },
        "noise": {
            "arms": {n.arm: list(n.rates) for n in spread},
            "order_holds": [held, repeats],
        },
    }


def seed_figures(manifest: Manifest, arms: list[ArmSummary]) -> list[tuple[str, str, str]]:
    """The seeds' figures that apply, as (id, caption, SVG): the churn of a ladder."""
    if not manifest.ladder:
        return []
    from swarmflow.experiments.seedfigures import CHURN_CAPTION, churn

    steps = ladder_steps([r for a in arms for r in a.rows], manifest.ladder)
    return [("churn", CHURN_CAPTION, churn(steps))]
