"""The seeds' extra figures for the HTML report: a ladder's churn (AgentRadio's Figure 4).

Drawn with the report's own matplotlib set-up (`figures`), as inline SVG.
"""

from __future__ import annotations

from swarmflow.experiments.breakdowns import Step
from swarmflow.experiments.figures import _pyplot, _svg

CHURN_CAPTION = "Churn along the ladder: runs each step gains and loses"


def churn(steps: list[Step]) -> str:
    """Per step, the pairs gained (up) and lost (down), with the net change marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * max(1, len(steps)), 2.8))
    names = [f"{s.lower}\u2192{s.upper}" for s in steps]
    gained = [len(s.gained) for s in steps]
    lost = [-len(s.lost) for s in steps]
    ax.bar(names, gained, color="#4c9a2a", label="gained")
    ax.bar(names, lost, color="#c0392b", label="lost")
    ax.scatter(
        names,
        [g + x for g, x in zip(gained, lost, strict=True)],
        color="#222",
        marker="D",
        zorder=3,
        label="net",
    )
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_ylabel("runs (task x repeat)")
    ax.legend(fontsize=7)
    return _svg(fig)
