"""The experiment's report as one self-contained HTML page: the tables and the figures.

Everything is inline (the figures are SVG drawn by matplotlib, the style a `<style>` block):
the page loads nothing from anywhere and runs no script.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from swarmflow.experiments.figures import FIGURES
from swarmflow.experiments.summary import ArmSummary

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 80em; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 12px; }
figure { margin: 1.5em 0; } figcaption { font-weight: 600; margin-bottom: .5em; }
svg { max-width: 100%; height: auto; }
"""


def render_html(
    name: str, text: str, arms: list[ArmSummary], extra: Sequence[tuple[str, str, str]] = ()
) -> str:
    """The page: a title, the text tables, then every figure with its caption (`extra`:
    more figures, as (id, caption, SVG), after the report's own)."""
    title = html.escape(f"Experiment {name}")
    drawn = [(key, caption, draw(arms)) for key, caption, draw in FIGURES]
    figures = "\n".join(
        f'<figure id="{key}" data-figure="{key}"><figcaption>{html.escape(caption)}</figcaption>'
        f"{svg}</figure>"
        for key, caption, svg in (*drawn, *extra)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{STYLE}</style></head><body>"
        f"<h1>{title}</h1><pre>{html.escape(text)}</pre>{figures}</body></html>\n"
    )
