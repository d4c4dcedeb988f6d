"""What every session of one agent shares within a run, resolved once per run.

A fan-out starts thousands of sessions of the same agent; each would otherwise resolve the
model, look up the price, build the tool schemas and copy the tool list again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmflow.context.window import ContextWindow
from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import Model, ToolSpec
from swarmflow.core.ports import ToolSource
from swarmflow.core.pricing import Price
from swarmflow.core.team import Agent
from swarmflow.core.tokens import spec_units
from swarmflow.core.toolcalls import tool_spec
from swarmflow.runtime.context import RunContext
from swarmflow.sessions.agent_tools import agent_tools
from swarmflow.sessions.prefix import FirstRequest


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
    window: ContextWindow
    """Its context policy, resolved against the registered processors (docs/context.md)."""
    summariser: Model
    """The model that writes its context summaries: the policy's, else its own."""
    summariser_name: str | None
    summariser_price: Price
    summary_ledger: Ledger | None
    """The policy's `summary_allowance` for all its sessions' summaries in the run."""
    first_request: FirstRequest
    """Its first session's first request: later sessions measure their shared prefix on it."""


def agent_profile(run: RunContext, agent: Agent) -> AgentProfile:
    """The agent's profile, built on its first session of the run.

    Keyed by the declaration, not the name: sub-flow teams may reuse a name with other tools.
    """
    found = run.state.profiles.get(id(agent))
    if found is None or found[0] is not agent:
        model = run.deps.model_for(agent)
        name: str | None = getattr(model, "name", None)
        window = ContextWindow(agent.context, agent=agent.name)
        summariser = _summariser(run, agent, model)
        summariser_name: str | None = getattr(summariser, "name", None)
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
            window=window,
            summariser=summariser,
            summariser_name=summariser_name,
            summariser_price=run.deps.prices.price(summariser_name),
            summary_ledger=_summary_ledger(agent),
            first_request=FirstRequest(),
        )
        found = run.state.profiles[id(agent)] = (agent, profile)
    return found[1]


def _summary_ledger(agent: Agent) -> Ledger | None:
    allowance = agent.context.summary_allowance if agent.context is not None else None
    if allowance is None:
        return None
    return Ledger(f"{agent.name} summaries", Limits(tokens=allowance))


def _summariser(run: RunContext, agent: Agent, own: Model) -> Model:
    """The policy's summariser resolved as the run resolves an agent's model, else `own`."""
    named = agent.context.summariser if agent.context is not None else None
    if named is None:
        return own
    return run.deps.model_for(agent.model_copy(update={"model": named}))


def agent_tool_specs(agent: Agent, source: ToolSource, names: tuple[str, ...]) -> list[ToolSpec]:
    """The schemas of the agent's tools, exactly as the model is sent them."""
    missing = [name for name in names if name not in source]
    if missing:
        raise ConfigError(
            f"agent {agent.name!r} declares unknown tools {missing}", agent=agent.name
        )
    return [tool_spec(source.get(name)) for name in names]
