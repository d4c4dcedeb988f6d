"""The control tools: `submit` ends the session with a summary; `message_agent` talks to a peer."""

from __future__ import annotations

from pydantic import Field

from swarmflow.core.errors import ToolError, TopologyError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.tools.base import ArgsModel, BuiltinTool


class SubmitArgs(ArgsModel):
    """Arguments of `submit`."""

    summary: str = Field(description="What you did and why, for whoever reviews the work.")


class MessageAgentArgs(ArgsModel):
    """Arguments of `message_agent`."""

    to: str = Field(description="Name of the agent to message.")
    text: str = Field(description="The message.")


class Submit(BuiltinTool[SubmitArgs], name="submit"):
    """Finish: submit your work with a short summary. Call it once, when done."""

    async def call(self, args: SubmitArgs, ctx: ToolContext) -> ToolResult:
        """Return a submitted result carrying the summary: the session ends."""
        return ToolResult(f"submitted: {args.summary}", submitted=True, value=args.summary)


class MessageAgent(BuiltinTool[MessageAgentArgs], name="message_agent"):
    """Send a message to another agent on your team and wait for its reply."""

    async def call(self, args: MessageAgentArgs, ctx: ToolContext) -> ToolResult:
        """Deliver through the session's messenger, which enforces the topology (the team's
        edges decide who may be messaged)."""
        if ctx.message_agent is None:
            raise ToolError("messaging other agents is not available in this session")
        try:
            reply = await ctx.message_agent(args.to, args.text)
        except TopologyError as exc:
            # An undeclared edge is the model's mistake to learn from, not a crash.
            raise ToolError(f"message to {args.to!r} refused: {exc.message}") from None
        return ToolResult(reply, value=reply)
