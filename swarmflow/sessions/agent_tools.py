"""The tools one agent can call in a run: its own tool objects, its tool servers', the run's.

An agent is given tools by name (looked up in the run's registry), as objects (`@tool`
functions, tools under a `tool_policy`) or as tool providers (MCP servers). Providers start
with the run and stop with it (`serving`), also on failure and cancellation; an agent's own
objects shadow the registry's tool of the same name for that agent only, so two agents may
give the same tool different policies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager

from swarmflow.core.errors import ConfigError
from swarmflow.core.ports import Tool, ToolProvider, ToolSource
from swarmflow.core.team import Agent
from swarmflow.runtime.context import RunContext


class AgentTools:
    """A tool source: the agent's own tools first, then the run's registry."""

    def __init__(self, own: dict[str, Tool], base: ToolSource) -> None:
        self.own = own
        self.base = base

    def get(self, name: str) -> Tool:
        found = self.own.get(name)
        return found if found is not None else self.base.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.own or name in self.base


def agent_tools(run: RunContext, agent: Agent) -> tuple[AgentTools, tuple[str, ...]]:
    """The agent's tool source and the names it may call, in the order it gave them."""
    own: dict[str, Tool] = {}
    names = list(agent.tools)
    for item in agent.provided:
        for tool in _tools_of(run, agent, item):
            if own.get(tool.name, tool) is not tool:
                raise ConfigError(
                    f"agent {agent.name!r} is given two different tools named {tool.name!r}",
                    agent=agent.name,
                )
            own[tool.name] = tool
            if tool.name not in names:
                names.append(tool.name)
    return AgentTools(own, run.deps.tools), tuple(names)


def _tools_of(run: RunContext, agent: Agent, item: object) -> tuple[Tool, ...]:
    if isinstance(item, ToolProvider) and not isinstance(item, Tool):
        served = run.state.served_tools.get(id(item))
        if served is None:
            raise ConfigError(
                f"tool server {item.name!r} of agent {agent.name!r} was not started: tool "
                "servers start with the run, so give them to agents of the flow's own team",
                agent=agent.name,
            )
        return served
    if isinstance(item, Tool):
        return (item,)
    raise ConfigError(f"agent {agent.name!r} was given {item!r}, which is not a tool")


def providers(agents: Iterable[Agent]) -> list[ToolProvider]:
    """Every tool provider the agents were given, each once, in declaration order."""
    found: dict[int, ToolProvider] = {}
    for agent in agents:
        for item in agent.provided:
            if isinstance(item, ToolProvider) and not isinstance(item, Tool):
                found.setdefault(id(item), item)
    return list(found.values())


@asynccontextmanager
async def serving(run: RunContext, agents: Iterable[Agent]) -> AsyncIterator[None]:
    """Start the agents' tool providers for the body of the block; stop them when it ends."""
    async with AsyncExitStack() as stack:
        for provider in providers(agents):
            tools = await stack.enter_async_context(provider.open())
            run.state.served_tools[id(provider)] = tuple(tools)
        try:
            yield
        finally:
            for provider in providers(agents):
                run.state.served_tools.pop(id(provider), None)
