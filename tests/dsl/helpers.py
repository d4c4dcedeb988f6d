"""Shared helpers for the DSL tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmflow.dsl import check_source, load_source
from swarmflow.dsl.syntax.diagnostics import Diagnostic, render_all
from swarmflow.record.events import EventBase

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs" / "dsl.md"

# Envelope fields that differ between two runs of the same flow: ids, clocks, latencies.
# `graph` and `nodes` number nodes in creation order, which is scheduling, not behaviour; the
# equivalence test compares the graphs' nodes separately (`graph_nodes`).
VOLATILE = frozenset(
    {"run_id", "seq", "ts", "t", "session", "node", "latency", "duration", "seconds", "graph",
     "nodes", "token"}  # a person's resume token is bound to its run
)  # fmt: skip


def flow_text(
    steps: str,
    *,
    head: str = "",
    agents: str = "",
    edges: str = "",
    signature: str = "flow f(task: str) -> str",
) -> str:
    """A small flow around `steps` (indented for readability; whitespace does not matter)."""
    agents = agents or "agent a {}\nagent b {}"
    return f"{signature}\n{head}\n{agents}\n{edges}\nsteps {{\n{steps}\n}}\n"


def diags(source: str, **kw: Any) -> list[Diagnostic]:
    return check_source(source, "t.swarm", **kw)


def errors(source: str) -> list[Diagnostic]:
    return [d for d in diags(source) if d.is_error]


def codes(source: str) -> list[str]:
    return [d.code for d in diags(source)]


def rendered(source: str) -> str:
    return render_all(diags(source), source)


def load(source: str) -> Any:
    return load_source(source, "t.swarm")


def normalised(events: list[EventBase]) -> list[dict[str, Any]]:
    """Events with ids, timestamps and latencies left out, for comparing two runs."""
    return [e.model_dump(exclude=set(VOLATILE)) for e in events]


def graph_nodes(events: list[EventBase]) -> list[str]:
    """The executed graph's node labels and states, without their creation-order ids."""
    graph = next(e for e in events if e.type == "run_finished").graph  # type: ignore[attr-defined]
    return sorted(line.split('"', 1)[1] for line in graph.splitlines() if '["' in line)


def of_type(events: list[EventBase], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def passed(value: Any) -> Any:
    """A Python callable for flows under test: gives back what it is given."""
    return value
