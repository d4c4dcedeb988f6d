"""Model text as it streams in, for apps that show a run live (`swarmflow.stream`).

Text deltas are not events: they are not logged (the `model_called` event records the call
once it is complete). A model adapter that streams calls its `on_delta` hook with each piece
of text; the run wires that hook to `report_delta`, which hands the piece, with the envelope
of the session waiting on the call, to whoever listens in this context.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from swarmflow.runtime.context import current_session
from swarmflow.sessions.session import AgentSession


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of a model's answer, as it streamed in."""

    text: str
    agent: str | None
    session: str | None
    branch: str
    type: str = "text_delta"


delta_listener: ContextVar[Callable[[TextDelta], None] | None] = ContextVar(
    "swarmflow_delta_listener", default=None
)
"""Who receives text deltas in this context (set by `swarmflow.stream`); None: nobody."""


def report_delta(text: str) -> None:
    """A model adapter's `on_delta` hook: pass one piece of streamed text to the listener."""
    listener = delta_listener.get()
    if listener is None or not text:
        return
    session = current_session.get()
    if not isinstance(session, AgentSession):  # a model called outside any session
        listener(TextDelta(text, None, None, ""))
        return
    listener(TextDelta(text, session.agent.name, session.id, session.scope.branch))
