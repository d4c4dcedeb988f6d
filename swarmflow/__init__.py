"""swarmflow: multi-agent LLM work, coding first, as declarative dataflow.

Importing swarmflow has no side effects: no I/O, no event loop, no model client. Each public
name is imported from its module when it is first read (`swarmflow.core.lazy`), so
`import swarmflow` stays cheap and a script pays only for what it uses.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow._live import TextDelta
    from swarmflow.batches.local import batch
    from swarmflow.core.budget import BudgetSnapshot, Limits
    from swarmflow.core.errors import (
        AgentFailed,
        BudgetExhausted,
        ConfigError,
        FlowFailed,
        HumanTimeout,
        ModelError,
        RunPaused,
        SwarmflowError,
        TopologyError,
    )
    from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok
    from swarmflow.core.output import AgentOutput
    from swarmflow.core.patch import Patch
    from swarmflow.core.team import Agent, Team
    from swarmflow.operators import (
        agent,
        agent_session,
        budget,
        compact,
        human,
        parallel,
        pipeline,
        team,
    )
    from swarmflow.result import RunResult
    from swarmflow.runner import run, run_sync
    from swarmflow.runtime.flow import Flow, flow
    from swarmflow.runtime.team_result import RoleReport, TeamResult
    from swarmflow.stream import stream
    from swarmflow.tools.function_tool import ToolCallContext, tool
    from swarmflow.tools.mcp import mcp_http, mcp_stdio
    from swarmflow.tools.policy import tool_policy

# The same names and modules as the imports above (a test keeps the two in step).
export_lazily(
    __name__,
    {
        "swarmflow._live": ("TextDelta",),
        "swarmflow.batches.local": ("batch",),
        "swarmflow.core.budget": ("BudgetSnapshot", "Limits"),
        "swarmflow.core.errors": (
            "AgentFailed",
            "BudgetExhausted",
            "ConfigError",
            "FlowFailed",
            "HumanTimeout",
            "ModelError",
            "RunPaused",
            "SwarmflowError",
            "TopologyError",
        ),
        "swarmflow.core.outcomes": ("Cancelled", "Empty", "Failed", "Ok"),
        "swarmflow.core.output": ("AgentOutput",),
        "swarmflow.core.patch": ("Patch",),
        "swarmflow.core.team": ("Agent", "Team"),
        "swarmflow.operators": (
            "agent",
            "agent_session",
            "budget",
            "compact",
            "human",
            "parallel",
            "pipeline",
            "team",
        ),
        "swarmflow.result": ("RunResult",),
        "swarmflow.runner": ("run", "run_sync"),
        "swarmflow.runtime.flow": ("Flow", "flow"),
        "swarmflow.runtime.team_result": ("RoleReport", "TeamResult"),
        "swarmflow.stream": ("stream",),
        "swarmflow.tools.function_tool": ("ToolCallContext", "tool"),
        "swarmflow.tools.mcp": ("mcp_http", "mcp_stdio"),
        "swarmflow.tools.policy": ("tool_policy",),
    },
)

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentFailed",
    "AgentOutput",
    "BudgetExhausted",
    "BudgetSnapshot",
    "Cancelled",
    "ConfigError",
    "Empty",
    "Failed",
    "Flow",
    "FlowFailed",
    "HumanTimeout",
    "Limits",
    "ModelError",
    "Ok",
    "Patch",
    "RoleReport",
    "RunPaused",
    "RunResult",
    "SwarmflowError",
    "Team",
    "TeamResult",
    "TextDelta",
    "ToolCallContext",
    "TopologyError",
    "agent",
    "agent_session",
    "batch",
    "budget",
    "compact",
    "flow",
    "human",
    "mcp_http",
    "mcp_stdio",
    "parallel",
    "pipeline",
    "run",
    "run_sync",
    "stream",
    "team",
    "tool",
    "tool_policy",
]
