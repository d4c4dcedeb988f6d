"""What every session of one agent shares within a run, resolved once per run.

A fan-out starts thousands of sessions of the same agent; each would otherwise resolve the
model, look up the price, build the tool schemas and copy the tool list again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import Model, ToolSpec
from swarmflow.core.ports import ToolSource
from swarmflow.core.pricing import Price
from swarmflow.core.team import Agent
from swarmflow.core.tokens import spec_units
from swarmflow.core.toolcalls import tool_spec
from swarmflow.runtime.context import RunContext
from swarmflow.sessions.agent_tools import agent_tools


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """An agent's model, price, tool schemas and goal evaluators in this run."""

    model: Model
    model_name: str | None
    price: Price
    specs: list[ToolSpec]
    spec_units: int
    """The schemas' size in estimator units (see `swarmflow.core.tokens`)."""
    tools: tuple[str, ...]
    allowed: frozenset[str]
    """The same names, as the set its tool runner checks each call against."""
    goals: tuple[Any, ...]
    source: ToolSource
    """Where its tool calls find their tools: its own tool objects, then the run's."""
    provenance: frozenset[str]
    """What a new session of it has produced from: its own agent (one set for all of them)."""


def agent_profile(run: RunContext, agent: Agent) -> AgentProfile:
    """The agent's profile, built on its first session of the run.

    Keyed by the declaration, not the name: sub-flow teams may reuse a name with other tools.
    """
    found = run.state.profiles.get(id(agent))
    if found is None or found[0] is not agent:
        model = run.deps.model_for(agent)
        name: str | None = getattr(model, "name", None)
        source, names = agent_tools(run, agent)
        specs = agent_tool_specs(agent, source, names)
        profile = AgentProfile(
            model=model,
            model_name=name,
            price=run.deps.prices.price(name),
            specs=specs,
            spec_units=sum(spec_units(s) for s in specs),
            tools=names,
            allowed=frozenset(names),
            goals=(run.deps.goals or {}).get(agent.name, ()),
            source=source,
            provenance=frozenset((agent.name,)),
        )
        found = run.state.profiles[id(agent)] = (agent, profile)
    return found[1]


def agent_tool_specs(agent: Agent, source: ToolSource, names: tuple[str, ...]) -> list[ToolSpec]:
    """The schemas of the agent's tools, exactly as the model is sent them."""
    missing = [name for name in names if name not in source]
    if missing:
        raise ConfigError(
            f"agent {agent.name!r} declares unknown tools {missing}", agent=agent.name
        )
    return [tool_spec(source.get(name)) for name in names]
