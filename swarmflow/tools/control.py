"""The control tools: `submit` ends the session with a summary; `message_agent` talks to a peer."""

from __future__ import annotations

from pydantic import BaseModel, Field

from swarmflow.core.errors import ToolError, TopologyError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.tools.base import ArgsModel, expect_args


class SubmitArgs(ArgsModel):
    """Arguments of `submit`."""

    summary: str = Field(description="What you did and why, for whoever reviews the work.")


class MessageAgentArgs(ArgsModel):
    """Arguments of `message_agent`."""

    to: str = Field(description="Name of the agent to message.")
    text: str = Field(description="The message.")


class Submit:
    """Ends the session: the work is done."""

    name = "submit"
    description = "Finish: submit your work with a short summary. Call it once, when done."
    args: type[BaseModel] = SubmitArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Return a submitted result carrying the summary."""
        a = expect_args(args, SubmitArgs)
        return ToolResult(f"submitted: {a.summary}", submitted=True, value=a.summary)


class MessageAgent:
    """Sends a message to another agent and returns its answer (the team's edges decide who)."""

    name = "message_agent"
    description = "Send a message to another agent on your team and wait for its reply."
    args: type[BaseModel] = MessageAgentArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Deliver through the session's messenger, which enforces the topology."""
        a = expect_args(args, MessageAgentArgs)
        if ctx.message_agent is None:
            raise ToolError("messaging other agents is not available in this session")
        try:
            reply = await ctx.message_agent(a.to, a.text)
        except TopologyError as exc:
            # An undeclared edge is the model's mistake to learn from, not a crash.
            raise ToolError(f"message to {a.to!r} refused: {exc.message}") from None
        return ToolResult(reply, value=reply)
