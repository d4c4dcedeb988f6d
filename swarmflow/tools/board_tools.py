"""The board tools (AgentRadio's three primitives): `create_thread`, `send_message`,
`wait_for_mention`.

They talk to the run's board through `ToolContext.board` (a `BoardPort`), which checks every
delivery against the team's edges; a refusal comes back to the model as a failed tool call
saying why. `wait_for_mention` is the blocking receive: one step spent listening.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import BoardPort, ToolContext, ToolResult
from swarmflow.tools.base import ArgsModel, expect_args

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


class CreateThread:
    """Opens a thread on the run's board with the given participants."""

    name = "create_thread"
    description = (
        "Open a thread on the team's message board. Invite participants by name; you can only "
        "invite agents you have an edge to."
    )
    args: type[BaseModel] = CreateThreadArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        a = expect_args(args, CreateThreadArgs)
        text = board_of(ctx, self.name).create_thread(ctx.agent, a.name, a.participants)
        return ToolResult(text)


class SendMessage:
    """Posts a message to a board thread, @mentioning participants."""

    name = "send_message"
    description = (
        "Post a message to a thread you take part in. Mentioned participants are notified; "
        "only participants you have an edge to see the message."
    )
    args: type[BaseModel] = SendMessageArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        a = expect_args(args, SendMessageArgs)
        text = board_of(ctx, self.name).send_message(ctx.agent, a.thread, a.content, a.mentions)
        return ToolResult(text)


class WaitForMention:
    """Blocks until someone @mentions this agent; returns the mentions and the board."""

    name = "wait_for_mention"
    description = (
        "Wait until another agent @mentions you (or the timeout passes). Returns the "
        "mentions and a snapshot of every thread you take part in."
    )
    args: type[BaseModel] = WaitForMentionArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        a = expect_args(args, WaitForMentionArgs)
        text = await board_of(ctx, self.name).wait_for_mention(ctx.agent, a.timeout)
        return ToolResult(text)
