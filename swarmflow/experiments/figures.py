"""The experiment's figures, drawn with matplotlib (Agg) to inline SVG.

- the headline: Pass@1 and adherence per arm with their exact 95% intervals, and each arm's
  ITT and CACE against the reference (CACE with its range over the unverified runs);
- how runs end per arm, as stacked shares (OpenCollab's Figure 5);
- tokens per run: a dot per run, the mean, the allowance (Figure 6a);
- wall clock per run, the mean and the limit (Figure 7a);
- each agent's share of the tokens in each tenth of a run, averaged per arm (Figure 8).

Each axis is fitted to the data: a limit far beyond every run is marked at the axis's edge
with its value rather than stretching the axis to it. An agent has one colour in every panel,
legends are set at a legible size beside their axes, and a panel left out says why in the
figure.

matplotlib is imported when a figure is drawn, never when the package is.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from swarmflow.experiments.runread import END_REASONS
from swarmflow.experiments.summary import ArmSummary, Share

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from swarmflow.experiments.rows import Row

END_COLORS = ("#4c9f70", "#d9a441", "#8e7cc3", "#5b9bd5", "#c0504d", "#7f7f7f")
AGENT_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
"""One colour per agent, the same in every panel (matplotlib's tab10)."""
LEGEND_SIZE = 9
NOTE_SIZE = 8.5
FIT_MARGIN = 1.15
"""An axis reaches this far past the largest value it shows."""
POINT = "#3b6ea5"
_XML_HEAD = re.compile(r"^<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", re.DOTALL)


def _pyplot() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and selectable
    return plt


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    _pyplot().close(fig)
    return _XML_HEAD.sub("", buffer.getvalue()).strip()


def headline(arms: list[ArmSummary]) -> str:
    """Pass@1 and adherence with their intervals; ITT and CACE against the reference."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 0.9 + 0.5 * len(arms)), sharey=True)
    names = [a.name + (" (ref)" if a.record.reference else "") for a in arms]
    _shares(axes[0], [a.passed for a in arms], "Pass@1 (95% CI)")
    _shares(axes[1], [a.adherence for a in arms], "adherence (95% CI)")
    _effects(axes[2], arms)
    axes[0].set_yticks(range(len(arms)), names)
    axes[0].set_ylim(len(arms) - 0.5, -0.5)
    fig.tight_layout()
    return _svg(fig)


def _shares(ax: Axes, shares: list[Share], title: str) -> None:
    for y, share in enumerate(shares):
        low, high = share.interval
        ax.plot([100 * low, 100 * high], [y, y], color=POINT, linewidth=2)
        ax.plot([100 * share.value], [y], "o", color=POINT)
        ax.annotate(
            f"{share.k}/{share.n}",
            xy=(100 * high, y),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=NOTE_SIZE,
            va="center",
        )
    ax.set_xlim(0, 112)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("% of runs")


def _effects(ax: Axes, arms: list[ArmSummary]) -> None:
    """ITT (square) and CACE (dot, its range over the unverified runs) per arm; 0 marked."""
    ax.axvline(0, color="#999999", linewidth=1)
    values = [0.0]
    for y, arm in enumerate(arms):
        paired = arm.paired
        if paired is None:
            ax.annotate(
                "reference",
                xy=(0, y),
                xytext=(4, 0),
                textcoords="offset points",
                fontsize=NOTE_SIZE,
                va="center",
                color="#555555",
            )
            continue
        ax.plot([100 * paired.itt], [y], "s", color="#d9a441", label="ITT")
        values.append(100 * paired.itt)
        if paired.cace is not None:
            ax.plot([100 * paired.cace], [y], "o", color=POINT, label="CACE")
            values.append(100 * paired.cace)
        if paired.cace_range is not None:
            low, high = (100 * v for v in paired.cace_range)
            ax.plot([low, high], [y, y], color=POINT, linewidth=1.5)
            values.extend((low, high))
    reach = max(10.0, *(abs(v) for v in values)) * FIT_MARGIN
    ax.set_xlim(-reach, reach)
    ax.set_title("against the reference", fontsize=10)
    ax.set_xlabel("difference in Pass@1, points")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=LEGEND_SIZE, loc="lower right")


def end_reasons(arms: list[ArmSummary]) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.45 * len(arms)))
    names = [a.name for a in arms]
    left = [0.0] * len(arms)
    for reason, color in zip(END_REASONS, END_COLORS, strict=True):
        widths = [100 * a.ends()[reason] for a in arms]
        ax.barh(names, widths, left=left, color=color, label=reason)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of runs (%)")
    ax.invert_yaxis()
    ax.legend(fontsize=LEGEND_SIZE, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig)


Measure = Callable[["Row"], float]
Limit = Callable[["Row"], float | None]


def fitted_axis(values: list[float], limits: list[float]) -> tuple[float, list[float]]:
    """The upper end of an axis that shows every value, and the limits that fall beyond it.

    The axis reaches `FIT_MARGIN` past the largest value; a limit within that reach is drawn
    on the axis, one beyond it is marked at the edge instead of stretching the axis.
    """
    top = max(values, default=0.0) * FIT_MARGIN or 1.0
    near = [x for x in limits if x <= top * 1.5]
    upper = max([top, *(x * 1.05 for x in near)])
    return upper, [x for x in limits if x > upper]


def _per_run(arms: list[ArmSummary], value: Measure, limit: Limit, what: str, red: str) -> str:
    """A dot per run, the mean as a bar, the limit as a red tick (or its value at the edge
    when it lies far beyond every run); `mean / limit` at the right. The axis says `what` is
    measured and, as its legend, what the red tick (`red`) stands for."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.5 * len(arms)))
    caps = [max((x for x in map(limit, a.rows) if x), default=None) for a in arms]
    values = [[float(value(r)) for r in a.rows] for a in arms]
    upper, beyond = fitted_axis([v for row in values for v in row], [c for c in caps if c])
    for y, (row, cap) in enumerate(zip(values, caps, strict=True)):
        ax.scatter(row, [y] * len(row), s=16, alpha=0.75, color=POINT)
        mean = sum(row) / len(row) if row else 0.0
        ax.plot([mean, mean], [y - 0.3, y + 0.3], color="black", linewidth=2)
        if cap and cap not in beyond:
            ax.plot([cap, cap], [y - 0.35, y + 0.35], color="#c0392b", linewidth=2)
        elif cap:
            ax.annotate(
                f"limit {cap:,.0f} →",
                xy=(1.0, y),
                xycoords=("axes fraction", "data"),
                xytext=(-4, 9),
                textcoords="offset points",
                ha="right",
                fontsize=NOTE_SIZE,
                color="#c0392b",
            )
        shown = f"{mean:,.0f} / {cap:,.0f}" if cap else f"{mean:,.0f} / -"
        ax.annotate(
            shown, xy=(1.01, y), xycoords=("axes fraction", "data"), fontsize=NOTE_SIZE, va="center"
        )
    ax.set_yticks(range(len(arms)), [a.name for a in arms])
    ax.set_xlim(0, upper)
    ax.set_ylim(len(arms) - 0.5, -0.5)
    ax.set_xlabel(f"{what} (dot: a run; bar: mean; red: {red})")
    return _svg(fig)


def tokens_per_run(arms: list[ArmSummary]) -> str:
    return _per_run(arms, lambda r: r.tokens, lambda r: r.allowance, "tokens per run", "allowance")


def wall_per_run(arms: list[ArmSummary]) -> str:
    return _per_run(
        arms, lambda r: r.wall, lambda r: r.wall_limit, "wall clock per run, s", "limit"
    )


def agent_colors(arms: list[ArmSummary]) -> dict[str, str]:
    """One colour per agent over every arm, in order of first appearance."""
    agents: dict[str, None] = {}
    for arm in arms:
        agents.update(dict.fromkeys(arm.shares()))
    return {a: AGENT_COLORS[i % len(AGENT_COLORS)] for i, a in enumerate(agents)}


def token_shares(arms: list[ArmSummary]) -> str:
    """One panel per arm with more than one agent: stacked shares over the tenths; the arms
    left out are named, with why, under the panels."""
    colors = agent_colors(arms)
    shown = [(a, s) for a, s in ((a, a.shares()) for a in arms) if len(s) > 1]
    left_out = [a.name for a in arms if len(a.shares()) <= 1]
    plt = _pyplot()
    count = max(1, len(shown))
    fig, axes = plt.subplots(1, count, figsize=(3.2 * count + 1.6, 2.9), squeeze=False)
    for ax, (arm, shares) in zip(axes[0], shown, strict=False):
        _share_panel(ax, arm.name, shares, colors)
    if not shown:
        axes[0][0].set_axis_off()
    axes[0][0].set_ylabel("share of tokens (%)")
    used = {agent for _arm, shares in shown for agent in shares}
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for a, c in colors.items() if a in used]
    if handles:
        fig.legend(
            handles,
            [a for a in colors if a in used],
            fontsize=LEGEND_SIZE,
            loc="center left",
            bbox_to_anchor=(1.0, 0.55),
            frameon=False,
        )
    if left_out:
        note = f"Left out: {', '.join(left_out)} (one agent: it drew every token of its runs)."
        fig.text(0.01, -0.06, note, fontsize=NOTE_SIZE, ha="left", va="top")
    fig.tight_layout()
    return _svg(fig)


def _share_panel(
    ax: Axes, name: str, shares: dict[str, list[float]], colors: dict[str, str]
) -> None:
    tenths = list(range(1, 11))
    bottom = [0.0] * 10
    for agent, row in shares.items():
        values = [100 * v for v in (row + [0.0] * 10)[:10]]
        ax.bar(tenths, values, bottom=bottom, color=colors[agent], width=0.9)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_title(name, fontsize=10)
    ax.set_xticks(tenths)
    ax.set_ylim(0, 100)
    ax.set_xlabel("tenth of the run")


FIGURES: tuple[tuple[str, str, Callable[[list[ArmSummary]], str]], ...] = (
    ("headline", "Pass@1, adherence, and each arm against the reference", headline),
    ("end-reasons", "How runs ended", end_reasons),
    ("tokens", "Tokens per run", tokens_per_run),
    ("wall", "Wall clock per run", wall_per_run),
    ("token-shares", "Each agent's share of tokens per tenth of a run", token_shares),
)
