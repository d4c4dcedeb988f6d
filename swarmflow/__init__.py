"""swarmflow: multi-agent LLM work, coding first, as declarative dataflow.

Importing swarmflow has no side effects: no I/O, no event loop, no model client.
"""

from swarmflow.batches import batch
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
from swarmflow.runner import RunResult, run, run_sync
from swarmflow.runtime.flow import Flow, flow
from swarmflow.runtime.team_result import RoleReport, TeamResult
from swarmflow.stream import TextDelta, stream
from swarmflow.tools.function_tool import ToolCallContext, tool
from swarmflow.tools.mcp import mcp_http, mcp_stdio
from swarmflow.tools.policy import tool_policy

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
