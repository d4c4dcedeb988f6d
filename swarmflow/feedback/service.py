"""Language-server feedback for a run (implements `core.ports.FeedbackPort`).

Servers start on first use, one per server and workspace root, and stop with the run
(`aclose`, which the run calls on every way out). A server that cannot start, or does not
answer `initialize` in time, is said once (a warning and a `feedback_unavailable` event) and
the run goes on without it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from swarmflow.core.feedback_policy import Feedback
from swarmflow.core.ports import Inbox, Workspace
from swarmflow.core.team import Agent
from swarmflow.feedback.servers import KNOWN_SERVERS, ServerSpec, ServerUnavailable
from swarmflow.feedback.watch import SessionWatch
from swarmflow.record.events import FeedbackUnavailable

if TYPE_CHECKING:
    from swarmflow.feedback.connection import Connection

_log = logging.getLogger("swarmflow.feedback")

Key = tuple[str, Path]


class LanguageFeedback:
    """The run's language servers, by server name and workspace root."""

    def __init__(self, servers: Mapping[str, ServerSpec] | None = None) -> None:
        self.specs: dict[str, ServerSpec] = {**KNOWN_SERVERS, **(servers or {})}
        self._connections: dict[Key, Connection] = {}
        self._started: list[Connection] = []
        """Every connection whose process was started, ready or not: all are stopped."""
        self._unavailable: dict[Key, str] = {}
        self._locks: dict[Key, anyio.Lock] = {}
        self._closed = False

    def watch(self, agent: Agent, workspace: Workspace, inbox: Inbox) -> SessionWatch | None:
        """The watch for one session of `agent` (None when it asks for no feedback)."""
        policy = agent.feedback
        if not isinstance(policy, Feedback):
            return None
        return SessionWatch(self, policy, workspace.root.resolve(), inbox)

    def spec(self, name: str) -> ServerSpec | None:
        return self.specs.get(name)

    async def connection(
        self, name: str, root: Path, policy: Feedback, inbox: Inbox
    ) -> Connection | None:
        """The started server `name` for `root`, started now if need be (None: unavailable)."""
        key = (name, root)
        found = self._connections.get(key)
        if found is not None or key in self._unavailable or self._closed:
            return found
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            if key not in self._connections and key not in self._unavailable:
                await self._start(key, policy, inbox)
        return self._connections.get(key)

    async def _start(self, key: Key, policy: Feedback, inbox: Inbox) -> None:
        name, root = key
        spec = self.specs.get(name)
        if spec is None:
            known = ", ".join(sorted(self.specs))
            return self._give_up(key, f"no language server named {name!r} (known: {known})", inbox)
        command = spec.command()
        if command is None:
            return self._give_up(key, f"{spec.argv[0]!r} is not installed", inbox)
        try:  # pygls comes with the `lsp` extra: without it, feedback is off, not the run
            from swarmflow.feedback.connection import Connection
        except ImportError as exc:
            reason = f"{exc.name or 'pygls'} is not installed (pip install 'swarmflow[lsp]')"
            return self._give_up(key, reason, inbox)
        connection = Connection(spec, root)
        self._started.append(connection)
        try:
            await connection.start(command, policy.start_timeout)
        except ServerUnavailable as exc:
            with anyio.CancelScope(shield=True):
                await connection.stop()
            return self._give_up(key, str(exc), inbox)
        self._connections[key] = connection

    def _give_up(self, key: Key, reason: str, inbox: Inbox) -> None:
        """Say once that a server is unavailable; the run goes on without it."""
        self._unavailable[key] = reason
        name, root = key
        _log.warning(
            "swarmflow: language server %s is unavailable for %s: %s; the run goes on "
            "without its diagnostics",
            name,
            root,
            reason,
        )
        inbox.emit(FeedbackUnavailable, server=name, reason=reason)

    def mark_unanswered(self, connection: Connection, reason: str, inbox: Inbox) -> None:
        """A started server stopped answering (it died): used no more this run."""
        key = (connection.spec.name, connection.root)
        if self._connections.pop(key, None) is not None:
            self._give_up(key, reason, inbox)

    @property
    def pids(self) -> list[int]:
        """The process ids of the servers started (for checks that none is left)."""
        return [pid for c in self._started if (pid := c.pid) is not None]

    async def aclose(self) -> None:
        """Stop every server started; kills those that do not exit in time."""
        self._closed = True
        started, self._started = self._started, []
        self._connections.clear()
        with anyio.CancelScope(shield=True):
            for connection in started:
                await connection.stop()
