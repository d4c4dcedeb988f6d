"""The board tools (AgentRadio's three primitives): `create_thread`, `send_message`,
`wait_for_mention`.

They talk to the run's board through `ToolContext.board` (a `BoardPort`), which checks every
delivery against the team's edges; a refusal comes back to the model as a failed tool call
saying why. `wait_for_mention` is the blocking receive: one step spent listening.
"""

from __future__ import annotations

from pydantic import Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import BoardPort, ToolContext, ToolResult
from swarmflow.tools.base import ArgsModel, BuiltinTool

DEFAULT_WAIT = 60.0
"""Seconds `wait_for_mention` waits when the model gives no timeout."""


class CreateThreadArgs(ArgsModel):
    """Arguments of `create_thread`."""

    name: str = Field(description="The thread's name, unique on the board (e.g. 'plan').")
    participants: list[str] = Field(
        description="Agents to invite (you take part anyway); each needs an edge from you."
    )


class SendMessageArgs(ArgsModel):
    """Arguments of `send_message`."""

    thread: str = Field(description="The thread to post to (one you take part in).")
    content: str = Field(description="The message.")
    mentions: list[str] = Field(
        default_factory=list,
        description="Participants to @mention: each is woken or told at its next step.",
    )


class WaitForMentionArgs(ArgsModel):
    """Arguments of `wait_for_mention`."""

    timeout: float = Field(
        default=DEFAULT_WAIT,
        description="Seconds to wait for a mention (0 only looks; at most 3600).",
    )


def board_of(ctx: ToolContext, tool: str) -> BoardPort:
    """The session's board, or a ToolError saying the agent has none."""
    if ctx.board is None:
        raise ToolError(f"tool {tool!r} needs the run's message board, which this session lacks")
    return ctx.board


class CreateThread(BuiltinTool[CreateThreadArgs], name="create_thread"):
    """Open a thread on the team's message board. Invite participants by name; you can only
    invite agents you have an edge to."""

    async def call(self, args: CreateThreadArgs, ctx: ToolContext) -> ToolResult:
        board = board_of(ctx, self.name)
        return ToolResult(board.create_thread(ctx.agent, args.name, args.participants))


class SendMessage(BuiltinTool[SendMessageArgs], name="send_message"):
    """Post a message to a thread you take part in. Mentioned participants are notified; only
    participants you have an edge to see the message."""

    async def call(self, args: SendMessageArgs, ctx: ToolContext) -> ToolResult:
        board = board_of(ctx, self.name)
        return ToolResult(board.send_message(ctx.agent, args.thread, args.content, args.mentions))


class WaitForMention(BuiltinTool[WaitForMentionArgs], name="wait_for_mention"):
    """Wait until another agent @mentions you (or the timeout passes). Returns the mentions and
    a snapshot of every thread you take part in."""

    async def call(self, args: WaitForMentionArgs, ctx: ToolContext) -> ToolResult:
        board = board_of(ctx, self.name)
        return ToolResult(await board.wait_for_mention(ctx.agent, args.timeout))
