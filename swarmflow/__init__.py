"""swarmflow: multi-agent LLM work, coding first, as declarative dataflow.

Importing swarmflow has no side effects: no I/O, no event loop, no model client. Each public
name is imported from its module when it is first read (`swarmflow.core.lazy`), so
`import swarmflow` stays cheap and a script pays only for what it uses.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.batches.local import batch as batch
    from swarmflow.core.budget import BudgetSnapshot as BudgetSnapshot
    from swarmflow.core.budget import Limits as Limits
    from swarmflow.core.errors import AgentFailed as AgentFailed
    from swarmflow.core.errors import BudgetExhausted as BudgetExhausted
    from swarmflow.core.errors import ConfigError as ConfigError
    from swarmflow.core.errors import FlowFailed as FlowFailed
    from swarmflow.core.errors import HumanTimeout as HumanTimeout
    from swarmflow.core.errors import ModelError as ModelError
    from swarmflow.core.errors import RunPaused as RunPaused
    from swarmflow.core.errors import SwarmflowError as SwarmflowError
    from swarmflow.core.errors import TopologyError as TopologyError
    from swarmflow.core.outcomes import Cancelled as Cancelled
    from swarmflow.core.outcomes import Empty as Empty
    from swarmflow.core.outcomes import Failed as Failed
    from swarmflow.core.outcomes import Ok as Ok
    from swarmflow.core.output import AgentOutput as AgentOutput
    from swarmflow.core.patch import Patch as Patch
    from swarmflow.core.team import Team as Team
    from swarmflow.operators import agent as agent
    from swarmflow.operators import agent_session as agent_session
    from swarmflow.operators import budget as budget
    from swarmflow.operators import compact as compact
    from swarmflow.operators import human as human
    from swarmflow.operators import parallel as parallel
    from swarmflow.operators import pipeline as pipeline
    from swarmflow.operators import team as team
    from swarmflow.operators.agent import Agent as Agent
    from swarmflow.runner.lifecycle import run as run
    from swarmflow.runner.lifecycle import run_sync as run_sync
    from swarmflow.runner.live import TextDelta as TextDelta
    from swarmflow.runner.result import RunResult as RunResult
    from swarmflow.runtime.flow import Flow as Flow
    from swarmflow.runtime.flow import flow as flow
    from swarmflow.stream import stream as stream
    from swarmflow.teams.result import RoleReport as RoleReport
    from swarmflow.teams.result import TeamResult as TeamResult
    from swarmflow.tools.function_tool import ToolCallContext as ToolCallContext
    from swarmflow.tools.function_tool import tool as tool
    from swarmflow.tools.mcp import mcp_http as mcp_http
    from swarmflow.tools.mcp import mcp_stdio as mcp_stdio
    from swarmflow.tools.policy import tool_policy as tool_policy

export_lazily(__name__)

__version__ = "0.1.0"
