"""The experiment's report as text (the seeds' Tables 3, 4, 6 and 10, per arm) and as JSON."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from swarmflow.experiments.grading_notes import Grading
from swarmflow.experiments.layout import Manifest
from swarmflow.experiments.runread import AXES, END_REASONS
from swarmflow.experiments.summary import ArmSummary, Share
from swarmflow.report._format import table


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def _ci(share: Share) -> str:
    if not share.n:
        return "-"
    low, high = share.interval
    return f"{_pct(share.value)} [{_pct(low)}, {_pct(high)}]"


def render_text(
    manifest: Manifest,
    arms: list[ArmSummary],
    warnings: list[str],
    grading: Grading | None = None,
    extra: Sequence[str] = (),
) -> str:
    """Every table of the report (`extra`: more sections, after the report's own), with a
    line on what the runs were and what is missing."""
    grading = grading or Grading()
    parts = [
        _header(manifest, arms, grading),
        "Outcome and organization (95% Clopper-Pearson intervals; ITT and CACE against the "
        "reference, in points; CACE brackets: unverified counted adherent / not, not a CI)\n"
        + _main(arms),
        "Paired by task and repeat against the reference (exact sign test on the discordant "
        "pairs); paired differences over the arm's adherent and non-adherent runs\n" + _pairs(arms),
        "Adherence per assigned axis (share of runs where it held)\n" + _axes(arms),
        "Resources per run (means)\n" + _resources(arms),
        "Tokens and time per agent (means per run: tokens, model s, tool s)\n" + _agents(arms),
        "How runs ended (shares)\n" + _ends(arms),
    ]
    if any(a.output_modes() for a in arms):
        parts.append("Output modes the servers were asked for (runs)\n" + _modes(arms))
    parts.extend(extra)
    missing = sum(max(0, a.expected - len(a.rows)) for a in arms)
    if missing:
        parts.append(f"{missing} run(s) not finished yet: run the experiment again to go on")
    parts.extend(f"warning: {w}" for w in warnings)
    return "\n\n".join(parts) + "\n"


def _header(manifest: Manifest, arms: list[ArmSummary], grading: Grading) -> str:
    models = sorted({r.model for a in arms for r in a.rows if r.model})
    graders = "; ".join(grading.graders) or manifest.grader
    lines = [
        f"Experiment {manifest.name}: {len(manifest.arms)} arms x {len(manifest.tasks)} tasks x "
        f"{manifest.repeats} repeats, graded by {graders}",
        "models: " + ("; ".join(models) or "none called"),
        *(f"graded outside the sandbox: {why}" for why in grading.unsandboxed),
    ]
    edited = [(a.name, sum(r.tests_edited for r in a.rows)) for a in arms]
    if any(n for _, n in edited):
        shown = ", ".join(f"{name} {n}" for name, n in edited if n)
        lines.append(f"tests edited (restored from the base before grading): {shown}")
    lines += [
        f"grade error: {r.arm}/{r.task}/r{r.repeat}: {r.grade_error}"
        for a in arms
        for r in a.rows
        if r.grade_error
    ]
    return "\n".join(lines)


def _main(arms: list[ArmSummary]) -> str:
    rows: list[tuple[str, ...]] = [
        (
            "arm",
            "runs",
            "Pass@1 % [95% CI]",
            "Adherence % [95% CI]",
            "Unverified %",
            "ITT",
            "CACE [sensitivity]",
            "vs ref",
        )
    ]
    for a in arms:
        p = a.paired
        rubric = f" rubric {_pct(a.rubric_rate)}%" if a.rubric_rate is not None else ""
        name = f"{a.name} (reference)" if a.record.reference else a.name
        rows.append(
            (
                name,
                str(len(a.rows)),
                _ci(a.passed) + rubric,
                _ci(a.adherence),
                _pct(a.unverified.value) if a.rows else "-",
                "-" if p is None else _pct(p.itt, signed=True),
                "-" if p is None else _cace(p.cace, p.cace_range),
                "-" if p is None else f"{p.only_arm}:{p.only_reference} ({_p(p.p)})",
            )
        )
    return table(rows, right=(1,))


def _cace(cace: float | None, bracket: tuple[float, float] | None) -> str:
    if cace is None:
        return "- (no adherent run)"
    shown = _pct(cace, signed=True)
    if bracket is not None:
        shown += f" [{_pct(bracket[0], signed=True)}, {_pct(bracket[1], signed=True)}]"
    return shown


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.2f}"


def _pairs(arms: list[ArmSummary]) -> str:
    rows: list[tuple[str, ...]] = [
        ("arm", "both", "only arm", "only ref", "neither", "p", "paired A=1", "paired A=0")
    ]
    for a in arms:
        p = a.paired
        if p is None:
            continue
        rows.append(
            (
                a.name,
                str(p.both),
                str(p.only_arm),
                str(p.only_reference),
                str(p.neither),
                _p(p.p),
                f"{_pct(p.paired_adherent, signed=True)} (n={p.adherent_pairs})",
                f"{_pct(p.paired_not_adherent, signed=True)} (n={p.not_adherent_pairs})",
            )
        )
    return table(rows, right=(1, 2, 3, 4, 5)) if len(rows) > 1 else "  (only the reference)"


def _axes(arms: list[ArmSummary]) -> str:
    rows: list[tuple[str, ...]] = [("arm", "delegation assigned", *AXES)]
    for a in arms:
        rows.append(
            (
                a.name,
                a.record.delegation,
                *(_pct(a.axes[x].value) if x in a.axes else "n/a" for x in AXES),
            )
        )
    return table(rows)


def _mean(name: str, spec: str) -> Callable[[ArmSummary], str]:
    """An arm's mean of the row field `name` per run, shown with the format `spec`."""
    return lambda a: format(a.mean(name), spec)


_RESOURCES: tuple[tuple[str, Callable[[ArmSummary], str]], ...] = (
    ("tokens", _mean("tokens", ",.0f")),
    ("cost $", _mean("cost", ".4f")),
    ("cache hit %", lambda a: _pct(a.cache_share)),
    ("wall s", _mean("wall", ".2f")),
    ("model s", _mean("model_seconds", ".2f")),
    ("tool s", _mean("tool_seconds", ".2f")),
    ("engine s", _mean("engine_seconds", ".2f")),
    ("judge tokens", _mean("judge_tokens", ",.0f")),
)
"""The resources table after its arm column: each heading beside how an arm's cell is shown."""


def _resources(arms: list[ArmSummary]) -> str:
    rows: list[tuple[str, ...]] = [("arm", *(heading for heading, _ in _RESOURCES))]
    rows += [(a.name, *(cell(a) for _, cell in _RESOURCES)) for a in arms]
    return table(rows, right=tuple(range(1, len(_RESOURCES) + 1)))


def _agents(arms: list[ArmSummary]) -> str:
    lines = []
    for a in arms:
        tokens = a.per_agent("tokens_by_agent")
        model = a.per_agent("model_seconds_by_agent")
        tool = a.per_agent("tool_seconds_by_agent")
        shown = ", ".join(
            f"{agent} {tokens[agent]:,.0f} / {model.get(agent, 0):.2f}s / {tool.get(agent, 0):.2f}s"
            for agent in tokens
        )
        lines.append(f"  {a.name}: {shown or '-'}")
    return "\n".join(lines)


def _ends(arms: list[ArmSummary]) -> str:
    rows: list[tuple[str, ...]] = [("arm", *END_REASONS)]
    for a in arms:
        ends = a.ends()
        rows.append((a.name, *(_pct(ends[r]) if a.rows else "-" for r in END_REASONS)))
    return table(rows, right=tuple(range(1, len(END_REASONS) + 1)))


def _modes(arms: list[ArmSummary]) -> str:
    """Which arms ran in which mode: a step-down mid-experiment shows as two forms."""
    rows: list[tuple[str, ...]] = [("arm", "modes")]
    for a in arms:
        found = a.output_modes()
        rows.append((a.name, ", ".join(f"{m} {n}" for m, n in found.items()) or "-"))
    return table(rows, right=())


def report_json(
    manifest: Manifest, arms: list[ArmSummary], warnings: list[str], grading: Grading | None = None
) -> dict[str, object]:
    """The same figures as data (`swarmflow experiment report DIR --json`)."""
    grading = grading or Grading()
    return {
        "experiment": manifest.name,
        "tasks": manifest.tasks,
        "repeats": manifest.repeats,
        "grader": manifest.grader,
        "graded_by": list(grading.graders),
        "unsandboxed": list(grading.unsandboxed),
        "seed": manifest.seed,
        "order": manifest.order,
        "arms": [_arm_json(a) for a in arms],
        "warnings": warnings,
    }


def _share_json(share: Share) -> dict[str, object]:
    low, high = share.interval
    return {"k": share.k, "n": share.n, "value": share.value, "ci95": [low, high]}


def _arm_json(a: ArmSummary) -> dict[str, object]:
    p = a.paired
    return {
        "name": a.name,
        "reference": a.record.reference,
        "controller": a.record.controller,
        "delegation": a.record.delegation,
        "runs": len(a.rows),
        "expected": a.expected,
        "pass_at_1": _share_json(a.passed),
        "rubric_rate": a.rubric_rate,
        "adherence": _share_json(a.adherence),
        "unverified": _share_json(a.unverified),
        "axes": {axis: _share_json(s) for axis, s in a.axes.items()},
        "tokens_mean": a.mean("tokens"),
        "tokens_by_agent": a.per_agent("tokens_by_agent"),
        "cost_mean": a.mean("cost"),
        "cache_hit": a.cache_share,
        "wall_mean": a.mean("wall"),
        "model_seconds_by_agent": a.per_agent("model_seconds_by_agent"),
        "tool_seconds_by_agent": a.per_agent("tool_seconds_by_agent"),
        "engine_seconds_mean": a.mean("engine_seconds"),
        "end_reasons": a.ends(),
        "tests_edited": sum(r.tests_edited for r in a.rows),
        "grade_errors": sum(bool(r.grade_error) for r in a.rows),
        "output_modes": a.output_modes(),
        "vs_reference": None
        if p is None
        else {
            "both": p.both,
            "only_arm": p.only_arm,
            "only_reference": p.only_reference,
            "neither": p.neither,
            "p": p.p,
            "itt": p.itt,
            "cace": p.cace,
            "cace_sensitivity": p.cace_range,
            "paired_adherent": p.paired_adherent,
            "paired_not_adherent": p.paired_not_adherent,
        },
    }
