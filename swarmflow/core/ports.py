"""The ports the runtime needs. Adapters (tools, workspaces, channels) implement them,
so they live in core, where adapters may import them without pointing outward (the event
sink's port is `swarmflow.record.sink`, beside the events it receives).

The runtime never imports a concrete adapter, `openai` or `subprocess`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from swarmflow.core.budget import BudgetSnapshot
from swarmflow.core.patch import Patch
from swarmflow.core.team import Agent


@runtime_checkable
class Workspace(Protocol):
    """The directory an agent's tools act in."""

    kind: str
    root: Path

    async def finalize(self, message: str) -> Patch | None:
        """Commit what changed and return the diff against the base (None if not versioned)."""

    async def release(self, keep: bool = False) -> None:
        """Give the workspace back (remove a worktree unless `keep`)."""


class WorkspaceProvider(Protocol):
    """Makes a workspace of a given kind for one session."""

    async def acquire(self, kind: str, agent: str, session: str) -> Workspace: ...

    async def close(self, keep: bool = False) -> None: ...


class BoardPort(Protocol):
    """The run's message board (threads, messages, @mentions) as the board tools see it.

    Every method checks the delivery against the team's edges; a refusal raises `ToolError`
    saying why, is recorded as an event, and delivers nothing.
    """

    def create_thread(self, sender: str, name: str, participants: Sequence[str]) -> str:
        """Open a thread; returns a short confirmation for the model."""

    def send_message(self, sender: str, thread: str, content: str, mentions: Sequence[str]) -> str:
        """Post to a thread; a refused mention refuses the whole message (nothing posted)."""

    async def wait_for_mention(self, agent: str, timeout: float | None) -> str:
        """Blocking receive: the next mention of `agent` and a snapshot of every thread it
        can see, as text for the model; says so when none came within `timeout` seconds."""


Emit = Callable[..., None]
"""`emit(EventClass, **fields)`: records an event with the caller's envelope filled in."""


@dataclass(slots=True)
class ToolContext:
    """What a tool may use while it runs."""

    agent: str
    session: str
    workspace: Workspace | None
    emit: Emit
    message_agent: Callable[[str, str], Awaitable[str]] | None = None
    declaration: Agent | None = None
    """The agent's declaration (its shell sandbox, network and environment settings)."""
    budget: Callable[[], BudgetSnapshot] | None = None
    """The calling branch's budget snapshot (a `BudgetSnapshot`), read when called."""
    board: BoardPort | None = None
    """The run's message board, for the board tools (None: the agent has none)."""
    run_dir: Path | None = None
    """The run's directory. No tool shows it to the agent, nor the runs root that holds it,
    where the workspace holds them (`swarmflow.tools.paths.private_dirs`); None outside a run."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's observation. `submitted` ends the session with reason "submitted"."""

    text: str
    ok: bool = True
    submitted: bool = False
    value: object = None


@runtime_checkable
class Tool(Protocol):
    """A callable the model can ask for, with a pydantic model for its arguments."""

    name: str
    description: str
    args: type[BaseModel]
    needs_workspace: bool

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult: ...


@runtime_checkable
class ToolProvider(Protocol):
    """Tools that exist only while something runs (an MCP server): opened when the run starts,
    closed when it ends, also on failure and cancellation."""

    name: str

    def open(self) -> AbstractAsyncContextManager[Sequence[Tool]]:
        """Start whatever serves the tools; yields them; stops it on exit."""


class ToolSource(Protocol):
    """Where the runtime finds tools by name (the tool registry implements it)."""

    def get(self, name: str) -> Tool: ...

    def __contains__(self, name: object) -> bool: ...


class HumanChannel(Protocol):
    """Asks a person. Returns the answer and who gave it."""

    name: str

    async def ask(
        self, question: str, payload: object, *, token: str, timeout: float | None
    ) -> tuple[object, str]:
        """Raise `TimeoutError` when nobody answered within `timeout` seconds."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One item for a session's inbox: given to the model at its next step boundary."""

    source: str
    """Where it comes from: "board", "diagnostics", "workspace", "commands"."""
    text: str
    """What the model reads, self-contained."""
    key: str = ""
    """Items with the same non-empty key, pending together, are given once (the newest)."""


class Inbox(Protocol):
    """A session's inbox as the sources of evidence see it. What is posted waits, and is
    given to the model in one message before the session's next model call, never in the
    middle of a call; posting costs no model call."""

    agent: str
    session: str

    def post(self, item: Evidence) -> None:
        """Queue `item` for the next step boundary."""

    def add_source(self, pull: Callable[[], Sequence[Evidence]]) -> None:
        """Call `pull` at every step boundary; what it returns is given with the rest."""

    def emit(self, cls: Any, **fields: Any) -> None:
        """Record an event in the session's name."""


@runtime_checkable
class PostsEvidence(Protocol):
    """A workspace that tells its sessions what others did in it (the shared kind)."""

    def subscribe(self, inbox: Inbox) -> None:
        """Post evidence for `inbox.session` from now on."""

    def unsubscribe(self, session: str) -> None:
        """The session ended: post nothing more to it, and end what it held (reservations)."""


class EditWatch(Protocol):
    """Watches one session's tool calls that may change files (language-server feedback)."""

    async def before_tool(self, tool: str, args: BaseModel) -> None:
        """Called before a tool call runs."""

    async def after_tool(self, tool: str, args: BaseModel, ok: bool) -> None:
        """Called after it ran: the changed files are checked, new findings posted."""


class FeedbackPort(Protocol):
    """Semantic feedback on agents' edits for a run; started lazily, closed with the run."""

    def watch(self, agent: Agent, workspace: Workspace, inbox: Inbox) -> EditWatch | None:
        """A watch for one session of `agent` in `workspace` (None: no feedback for it)."""

    async def aclose(self) -> None:
        """Stop every server it started; no process is left (also on failure and cancel)."""
