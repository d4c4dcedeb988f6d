"""The handoff rule: a value from agent A reaches agent B only along the edge A -> B."""

from __future__ import annotations

from typing import Any

from swarmflow.core.errors import TopologyError
from swarmflow.core.events import HandoffRefused, MessageRefused
from swarmflow.core.provenance import trace
from swarmflow.runtime.context import RunContext, current_scope


def sources_of(run: RunContext, values: Any) -> frozenset[str]:
    """The agents behind `values`: declared provenance, plus the agents whose fingerprinted
    output appears in the plain (untagged) strings among them."""
    if type(values) is str:  # the common case: a plain prompt, nothing to walk
        if len(run.fingerprints):
            return frozenset(run.fingerprints.sources(values))
        return frozenset()
    found, plain = trace(values, run.product_sources)
    if plain and len(run.fingerprints):
        extra: set[str] = set()
        for text in plain:
            extra |= run.fingerprints.sources(text)
        found = found | extra
    return found


def check_handoff(
    run: RunContext, target: str, values: Any, *, via: str, agent: str | None = None
) -> frozenset[str]:
    """Refuse (event + `TopologyError`) if any source of `values` lacks an edge to `target`."""
    sources = sources_of(run, values)
    if sources:
        for source in sorted(sources):
            if not run.team.allows(source, target):
                _refuse(run, source, target, via, agent)
    return sources


def _refuse(run: RunContext, source: str, target: str, via: str, agent: str | None) -> None:
    declared = sorted(run.team.edges)
    shown = ", ".join(f"{a} -> {b}" for a, b in declared) or "none"
    reason = f"no edge {source} -> {target}"
    fields = {
        "agent": agent,
        "branch": current_scope().branch,
        "source": source,
        "target": target,
        "reason": reason,
    }
    # An agent's own message_agent call is a refused message; anything else is a handoff.
    if via == "message_agent":
        run.log.record(MessageRefused, fields)
    else:
        run.log.record(HandoffRefused, {**fields, "via": via})
    raise TopologyError(
        f"refused to hand a value from {source!r} to {target!r} via {via}: the team declares "
        f"no edge {source} -> {target} (declared edges: {shown})",
        source=source,
        target=target,
        declared=declared,
        agent=agent,
        operator=via,
    )
