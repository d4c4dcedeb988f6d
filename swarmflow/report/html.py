"""`swarmflow report --html`: one self-contained page of a run, read from its events alone.

The page needs nothing at view time (no network, no files beside it): CSS and JS are inline,
the events travel as JSON inside it. It shows a timeline with one lane per session (model
calls, tools, waits, messages, questions to a person), the executed graph, cost per agent,
and the full event behind any entry on click.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import jinja2

from swarmflow.record.events import EventBase, HarnessStarted
from swarmflow.report._format import as_json, clip, share
from swarmflow.report.adherence import adherence
from swarmflow.report.digest import Digest, digest
from swarmflow.report.log import RunLog
from swarmflow.report.team import message_matrix, token_shares
from swarmflow.report.timeline import placed_lanes, span_of, timeline
from swarmflow.runtime.graph import Node, node_of, node_text

MIN_SPAN = 0.35
"""The narrowest an entry is drawn, in percent of the timeline, so instants stay clickable."""


@dataclass(frozen=True)
class TreeNode:
    """One executed operator call with the calls made inside it."""

    node: Node
    text: str
    children: list[TreeNode]
    follows: str
    """The text of the sibling it followed, or ''."""


def page_templates(package: str) -> jinja2.Environment:
    """The templates in `package`'s `templates` folder, set up as every page of swarmflow is
    rendered: values escaped, an undefined name an error, block tags leaving no blank lines."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def _template() -> jinja2.Template:
    return page_templates("swarmflow.report").get_template("report.html.j2")


def render_html(log: RunLog) -> str:
    """The page for a run's log."""
    return html_of(log.events, note=log.note())


def html_of(events: Sequence[EventBase], *, note: str = "") -> str:
    """The page for a run's events."""
    d = digest(events)
    entries = timeline(events)
    span = span_of(d, entries)
    return _template().render(
        d=d,
        title=f"{d.flow or 'run'} · {d.run_id or '?'} · {d.status}",
        note=note,
        output=clip(as_json(d.output), 2000) if d.has_output else None,
        span=span,
        lanes=placed_lanes(entries, span, MIN_SPAN),
        agents=_agents(d),
        matrix=message_matrix(events),
        shares=token_shares(events),
        tree=_tree([node_of(row) for row in d.graph]),
        edges=d.edges,
        events_json=_script_json([e.model_dump(mode="json") for e in events]),
        refusals=d.refusals,
        retries=d.retries,
        adherence=adherence(events) if d.agents else None,
        harnesses={e.agent: e.harness for e in events if isinstance(e, HarnessStarted) and e.agent},
    )


def _agents(d: Digest) -> list[dict[str, object]]:
    """Per agent: calls, tokens, prefix reuse, cost, and the bar width against the dearest."""
    spends = d.by_agent()
    top = max(
        [s.cost for s in spends.values()]
        + [s.tokens_in + s.tokens_out for s in spends.values()]
        + [0.0]
    )
    rows = []
    for agent, s in spends.items():
        weight = s.cost if any(x.cost for x in spends.values()) else s.tokens_in + s.tokens_out
        rows.append(
            {
                "agent": agent,
                "calls": s.calls,
                "tokens_in": s.tokens_in,
                "tokens_out": s.tokens_out,
                "cached": s.tokens_cached,
                "prefix": share(s.prefix_share),
                "across": share(s.cross_share),
                "cost": s.cost,
                "bar": round(100.0 * weight / top, 1) if top else 0.0,
            }
        )
    return rows


def _tree(nodes: list[Node]) -> list[TreeNode]:
    """The executed graph as nested calls, each call noting the one it followed."""
    text = {n.id: node_text(n) for n in nodes}
    children: dict[int | None, list[Node]] = {}
    for n in nodes:
        children.setdefault(n.parent if n.parent in text else None, []).append(n)

    def build(parent: int | None, depth: int) -> list[TreeNode]:
        if depth > 64:  # a pathological nesting is cut rather than recursed without end
            return []
        return [
            TreeNode(
                n,
                text[n.id],
                build(n.id, depth + 1),
                text.get(n.after, "") if n.after is not None else "",
            )
            for n in children.get(parent, [])
        ]

    return build(None, 0)


def _script_json(value: object) -> str:
    """JSON safe inside a `<script>` element: no `</script>` or comment opener can appear."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
