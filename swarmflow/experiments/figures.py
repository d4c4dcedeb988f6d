"""The seeds' figures for an experiment, drawn with matplotlib (Agg) to inline SVG.

- how runs end per arm, as stacked shares (OpenCollab's Figure 5);
- tokens per run: a dot per run, the mean, the allowance tick (Figure 6a);
- wall clock per run, the mean and the limit tick (Figure 7a);
- each agent's share of the tokens in each tenth of a run, averaged per arm (Figure 8).

matplotlib is imported when a figure is drawn, never when the package is.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

from swarmflow.experiments.runread import END_REASONS
from swarmflow.experiments.summary import ArmSummary

END_COLORS = ("#4c9f70", "#d9a441", "#8e7cc3", "#5b9bd5", "#c0504d", "#7f7f7f")
_XML_HEAD = re.compile(r"^<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", re.DOTALL)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and selectable
    return plt


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    _pyplot().close(fig)
    return _XML_HEAD.sub("", buffer.getvalue()).strip()


def end_reasons(arms: list[ArmSummary]) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(arms)))
    names = [a.name for a in arms]
    left = [0.0] * len(arms)
    for reason, color in zip(END_REASONS, END_COLORS, strict=True):
        widths = [100 * a.ends()[reason] for a in arms]
        ax.barh(names, widths, left=left, color=color, label=reason)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of runs (%)")
    ax.invert_yaxis()
    ax.legend(ncol=len(END_REASONS), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return _svg(fig)


Measure = Callable[[Any], Any]


def _per_run(arms: list[ArmSummary], value: Measure, limit: Measure, label: str) -> str:
    """A dot per run, the mean as a bar, the limit as a red tick; `mean / limit` at the right."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * len(arms)))
    top = 0.0
    for y, arm in enumerate(arms):
        values = [value(r) for r in arm.rows]
        limits = [x for x in (limit(r) for r in arm.rows) if x]
        ax.scatter(values, [y] * len(values), s=14, alpha=0.7, color="#3b6ea5")
        mean = sum(values) / len(values) if values else 0.0
        ax.plot([mean, mean], [y - 0.3, y + 0.3], color="black", linewidth=2)
        cap = max(limits) if limits else None
        if cap:
            ax.plot([cap, cap], [y - 0.35, y + 0.35], color="#c0392b", linewidth=2)
        top = max(top, cap or 0.0, *values, mean)
        shown = f"{mean:,.0f} / {cap:,.0f}" if cap else f"{mean:,.0f} / -"
        ax.annotate(shown, xy=(1.01, y), xycoords=("axes fraction", "data"), fontsize=8,
                    va="center")  # fmt: skip
    ax.set_yticks(range(len(arms)), [a.name for a in arms])
    ax.set_xlim(0, (top or 1.0) * 1.05)
    ax.set_ylim(len(arms) - 0.5, -0.5)
    ax.set_xlabel(label)
    return _svg(fig)


def tokens_per_run(arms: list[ArmSummary]) -> str:
    return _per_run(arms, lambda r: r.tokens, lambda r: r.allowance,
                    "tokens per run (dot: a run; bar: mean; red: allowance)")  # fmt: skip


def wall_per_run(arms: list[ArmSummary]) -> str:
    return _per_run(arms, lambda r: r.wall, lambda r: r.wall_limit,
                    "wall clock per run, s (dot: a run; bar: mean; red: limit)")  # fmt: skip


def token_shares(arms: list[ArmSummary]) -> str:
    """One panel per arm with more than one agent: stacked shares over the tenths."""
    panels = [(a, a.shares()) for a in arms]
    panels = [(a, s) for a, s in panels if len(s) > 1] or panels[:1]
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 2.6), squeeze=False)
    for ax, (arm, shares) in zip(axes[0], panels, strict=True):
        tenths = list(range(1, 11))
        bottom = [0.0] * 10
        for agent, row in shares.items():
            values = [100 * v for v in (row + [0.0] * 10)[:10]]
            ax.bar(tenths, values, bottom=bottom, label=agent, width=0.9)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_title(arm.name, fontsize=9)
        ax.set_xticks(tenths)
        ax.set_ylim(0, 100)
        ax.set_xlabel("tenth of the run")
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("share of tokens (%)")
    return _svg(fig)


FIGURES: tuple[tuple[str, str, Callable[[list[ArmSummary]], str]], ...] = (
    ("end-reasons", "How runs ended", end_reasons),
    ("tokens", "Tokens per run", tokens_per_run),
    ("wall", "Wall clock per run", wall_per_run),
    ("token-shares", "Each agent's share of tokens per tenth of a run", token_shares),
)
