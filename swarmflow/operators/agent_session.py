"""`agent_session`: one agent's conversation kept across stages of a flow."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
from pydantic import BaseModel

from swarmflow.core.errors import ConfigError
from swarmflow.core.output import AgentOutput
from swarmflow.record.events import OperatorFinished, OperatorStarted
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope
from swarmflow.sessions.call import declared_agent, finish_output, open_session
from swarmflow.sessions.handoff import check_outgoing
from swarmflow.sessions.prompts import render_prompt
from swarmflow.sessions.session import AgentSession


class SessionHandle:
    """A stateful session: `send` and `ask` run turns on one conversation, one at a time;
    `tell` adds to it without a turn."""

    def __init__(self, name: str, card_vars: dict[str, Any]) -> None:
        self.name = name
        self._card_vars = card_vars
        self._run: RunContext = current_run(f"agent_session({name!r})")
        self._agent = declared_agent(self._run, name)  # an unknown name fails here, not later
        parent = current_scope()
        self._node = self._run.state.graph.open("agent_session", parent.branch, parent.node, name)
        self._scope = Scope(parent.branch, parent.ledger, self._node)
        self._session: AgentSession | None = None
        self._opening = anyio.Lock(fast_acquire=True)
        self._closed = False

    @property
    def session(self) -> AgentSession | None:
        return self._session

    async def _open(self) -> AgentSession:
        if self._session is not None:
            return self._session
        async with self._opening:
            if self._session is None:
                self._run.deps.log.emit(
                    OperatorStarted,
                    branch=self._scope.branch,
                    operator="agent_session",
                    node=str(self._node),
                    detail={"agent": self.name},
                )
                self._session = await open_session(
                    self._run, self._agent, scope=self._scope, card_vars=self._card_vars
                )
            return self._session

    def _checked(self, message: object) -> str:
        """`message` as the agent will read it, once the handoff rule lets it through."""
        if self._closed or (self._session is not None and self._session.closed):
            raise ConfigError(
                f"the session of agent {self.name!r} is closed; nothing more can be sent to "
                "it (open another with agent_session)",
                agent=self.name,
                operator="agent_session",
            )
        text = render_prompt(message)
        check_outgoing(
            self._run, self.name, text, values=message, via="session message", agent=self.name
        )
        return text

    async def tell(self, message: object) -> None:
        """Add `message` to the conversation without a turn: no model call is made, and the
        next `send` or `ask` carries it (each told message is a user message of its own)."""
        await anyio.lowlevel.checkpoint_if_cancelled()  # inside a cancelled scope nothing is sent
        text = self._checked(message)
        session = self._session or await self._open()
        async with session.turn_lock:  # never inside a turn in flight
            session.tell(text)

    async def send(self, message: object) -> AgentOutput:
        """Add `message` to the conversation and run a turn; returns the agent's answer."""
        await anyio.lowlevel.checkpoint_if_cancelled()  # inside a cancelled scope nothing is sent
        text = self._checked(message)
        session = self._session or await self._open()
        async with session.turn_lock:
            await self._run.deps.take_turn(session, text, None)
        return finish_output(self._run, session, text, None, None)

    async def ask(self, prompt: object, output: type[BaseModel] | None = None) -> Any:
        """Run a turn and, with `output=`, return its answer validated as that model.

        An invalid answer is asked again with the validation error, up to a bound.
        """
        if output is None:
            return await self.send(prompt)
        await anyio.lowlevel.checkpoint_if_cancelled()
        text = self._checked(prompt)
        session = await self._open()
        async with session.turn_lock:  # a re-ask follows its own question, not another sender's
            value = await self._run.deps.take_turn(session, text, output)
        finish_output(self._run, session, text, value, None)
        return value

    async def close(self) -> None:
        """End the session; it is also closed when the run ends."""
        self._closed = True
        if self._session is not None and not self._session.closed:
            self._session.close()
            self._run.deps.log.emit(
                OperatorFinished,
                branch=self._scope.branch,
                operator="agent_session",
                node=str(self._node),
            )
        self._run.state.graph.close(self._node)

    async def __aenter__(self) -> SessionHandle:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.close()


def agent_session(name: str, /, **card_vars: Any) -> SessionHandle:
    """A stateful session of agent `name`, reused across stages; use with `async with`."""
    return SessionHandle(name, card_vars)
