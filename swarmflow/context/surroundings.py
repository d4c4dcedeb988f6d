"""What a processor is given besides the history: the pressure it works under and the
session's surroundings (where it may offload, who pays for a summary, and `ask`: the one way
a processor calls a model, through the metered call)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from swarmflow.calls.metered import Caller, metered_call
from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.errors import SwarmflowError
from swarmflow.core.messages import Message, Model, ModelRequest, Usage
from swarmflow.core.tokens import TokenEstimator, message_units
from swarmflow.record.events import ContextLevelRefused


@dataclass(frozen=True, slots=True)
class Answer:
    """What a processor's model call wrote, and what it was charged."""

    text: str
    usage: Usage
    cost: float


@dataclass(frozen=True, slots=True)
class Surroundings:
    """The session a compaction works for."""

    agent: str
    session: str
    workspace: Path | None
    """The agent's workspace root: offloaded content goes there, where its file tools read."""
    run_dir: Path | None
    """Where offloaded content goes when the agent has no workspace."""
    model: Model
    """The model that writes summaries (the policy's summariser, or the agent's own)."""
    model_name: str | None
    caller: Caller
    """Who a processor's call is made as: the session's agent, charged to every ledger the
    session's calls charge (and the policy's summary allowance), with purpose "summary"."""
    steps: int
    """The model calls the session had made when the compaction began."""
    estimator: TokenEstimator
    emit: Callable[..., None]
    """Records an event with the session's envelope (`AgentSession.emit`)."""
    context_tokens: int
    """The agent's context budget in tokens (a summary's own request must fit it too)."""

    async def ask(
        self, messages: Sequence[Message], *, max_tokens: int, level: str
    ) -> Answer | None:
        """Call the summariser (the policy's, or the agent's own model) with `messages`,
        through the metered call: reserved, capped, the rails, the write barrier, the journal,
        settled and recorded as any call is. None when it was refused (the budget, a rail, a
        failing model, an empty answer): `context_level_refused` names `level` and why."""
        units = sum(message_units(m) for m in messages)
        request = ModelRequest(
            messages=list(messages),
            agent=self.agent,
            model=self.model_name,
            max_tokens=max_tokens,
            estimated_prompt_tokens=self.estimator.tokens(units, self.model_name),
        )
        try:
            # All the output it may write is reserved: a summary's size is what it is given.
            caller = replace(self.caller, expected_output=max_tokens)
            called = await metered_call(
                caller, self.model, request, steps=self.steps, sent_units=units
            )
        except anyio.get_cancelled_exc_class():
            raise
        except (SwarmflowError, OSError, ValueError) as exc:  # a failed call costs nothing more
            self.emit(ContextLevelRefused, level=level, reason=describe(exc, 300))
            return None
        if called.refusal is not None:
            self.emit(ContextLevelRefused, level=level, reason=called.refusal.detail)
            return None
        text = (called.response.text if called.response else None) or ""
        if not text.strip():
            self.emit(ContextLevelRefused, level=level, reason="the summariser wrote nothing")
            return None
        return Answer(text, called.usage, called.cost)


@dataclass(frozen=True, slots=True)
class Pressure:
    """The room a compaction works in, in estimator units (`swarmflow.core.tokens`)."""

    room: int
    """What the history may take at most (the budget less the card and tool schemas)."""
    target: int
    """What the compaction reduces the history to: the policy's low watermark."""
    policy: ContextPolicy
    around: Surroundings

    def over(self, units: int) -> bool:
        return units > self.target

    def tokens(self, units: int) -> int:
        return self.around.estimator.tokens(units, self.around.model_name)


def describe(value: object, limit: int = 80) -> str:
    """`value` as one short line for an event's `removed` text."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
