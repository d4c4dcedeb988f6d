"""Diagrams of a finished run, read from its log, and Graphviz rendering to PNG or SVG."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from typing import Literal

from swarmflow.core.errors import SwarmflowError
from swarmflow.core.team import Agent, Team
from swarmflow.record.events import EventBase, RunFinished, RunStarted, TeamEnded
from swarmflow.report.team import MessageMatrix, message_matrix
from swarmflow.runtime.graph import Node, dot_of, mermaid_of, node_of

Which = Literal["topology", "steps", "run"]
TextFormat = Literal["mermaid", "dot"]
RENDER_SECONDS = 60


class GraphError(SwarmflowError):
    """A diagram that cannot be drawn: no such graph in the log, or no Graphviz."""


def run_diagram(events: Sequence[EventBase], which: Which, fmt: TextFormat) -> str:
    """The declared topology or the executed graph of the run in `events`."""
    if which == "steps":
        raise GraphError("a run directory has no step graph; draw the .swarm file for that")
    if which == "topology":
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        if started is None:
            raise GraphError("the log has no run_started event, so no declared team")
        return _topology(started, fmt)
    finished = next((e for e in events if isinstance(e, RunFinished)), None)
    if finished is None:
        raise GraphError("the run has not finished: its executed graph is recorded at the end")
    if finished.nodes:
        nodes = [node_of(row) for row in finished.nodes]
        if fmt == "mermaid":
            drawn = mermaid_of(nodes)
        else:
            drawn = dot_of(nodes, f"{started_name(events)}_run")
        return _with_conversation(drawn, nodes, events, fmt)
    if fmt == "mermaid" and finished.graph:
        return finished.graph  # a log from before nodes were recorded
    raise GraphError("this log records no executed graph in a form DOT can be made from")


def _with_conversation(
    drawn: str, nodes: Sequence[Node], events: Sequence[EventBase], fmt: TextFormat
) -> str:
    """The executed graph, plus what a Team run's roles said to each other: a Team run is one
    operator call, so its work shows only in who messaged whom (with how many messages)."""
    roles = [r for e in events if isinstance(e, TeamEnded) for r in [e.agent or "", *e.roles]]
    matrix = message_matrix(events)
    names = list(dict.fromkeys(n for n in [*roles, *matrix.names] if n))
    if not names:
        return drawn
    team_node = next((n.id for n in nodes if n.operator == "team"), None)
    lines = drawn.splitlines()
    closing = lines.pop() if fmt == "dot" else None  # the DOT graph's closing brace
    lines += (_mermaid_talk if fmt == "mermaid" else _dot_talk)(names, matrix, team_node)
    if closing is not None:
        lines.append(closing)
    return "\n".join(lines)


def _mermaid_talk(names: list[str], matrix: MessageMatrix, team_node: int | None) -> list[str]:
    ids = {name: f"r{i}" for i, name in enumerate(names)}
    lines = ['    subgraph talk["who talked to whom"]']
    lines += [f'        {ids[n]}(["{n}"])' for n in names]
    lines.append("    end")
    if team_node is not None:
        lines.append(f"    n{team_node} --> talk")
    for (source, target), count in sorted(matrix.counts.items()):
        lines.append(
            f'    {ids[source]} -- "{_messages(matrix, source, target, count)}" --> {ids[target]}'
        )
    return lines


def _dot_talk(names: list[str], matrix: MessageMatrix, team_node: int | None) -> list[str]:
    lines = ["    subgraph cluster_talk {", '        label="who talked to whom";']
    lines += [f'        "role:{n}" [label="{n}", shape=ellipse];' for n in names]
    lines.append("    }")
    if team_node is not None:
        lines.append(f'    n{team_node} -> "role:{names[0]}" [style=dotted];')
    for (source, target), count in sorted(matrix.counts.items()):
        label = _messages(matrix, source, target, count)
        lines.append(f'    "role:{source}" -> "role:{target}" [label="{label}"];')
    return lines


def _messages(matrix: MessageMatrix, source: str, target: str, count: int) -> str:
    mentions = matrix.mentions.get((source, target), 0)
    text = f"{count} message{'s' if count != 1 else ''}"
    return f"{text}, {mentions} @" if mentions else text


def started_name(events: Sequence[EventBase]) -> str:
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    return started.flow if started is not None else "run"


def _topology(started: RunStarted, fmt: TextFormat) -> str:
    return team_diagram(started.flow, started.agents, started.edges, fmt)


def team_diagram(
    flow: str, agents: Sequence[str], edges: Sequence[tuple[str, str]], fmt: TextFormat
) -> str:
    """A flow's declared team (its agents and who may talk to whom) as Mermaid or DOT."""
    if fmt == "mermaid":
        return Team([Agent(name) for name in agents], edges=tuple(edges)).mermaid()
    lines = [f'digraph "{flow}_team" {{', "    rankdir=LR;"]
    lines += [f'    "{name}" [shape=box];' for name in agents]
    lines.append('    "human" [shape=doublecircle];')
    lines += [f'    "{a}" -> "{b}";' for a, b in edges]
    lines.append("}")
    return "\n".join(lines)


def render_dot(dot: str, fmt: Literal["png", "svg"]) -> bytes:
    """Graphviz's rendering of `dot`; `GraphError` when `dot` is missing or fails."""
    program = shutil.which("dot")
    if program is None:
        raise GraphError(
            f"--format {fmt} needs Graphviz's `dot` on PATH (e.g. apt-get install graphviz); "
            "--format dot prints the source instead"
        )
    try:
        done = subprocess.run(
            [program, f"-T{fmt}"],
            input=dot.encode(),
            capture_output=True,
            timeout=RENDER_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GraphError(f"Graphviz could not render the graph: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise GraphError(f"Graphviz failed: {why[-1] if why else f'exit {done.returncode}'}")
    return done.stdout
