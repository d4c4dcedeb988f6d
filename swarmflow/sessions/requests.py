"""A session's requests: the first one laid out for a shared prefix, the inbox drained at each
step boundary, and compaction triggered when the history presses on the context budget.

Every text these add to what the model will read passes the handoff gate
(`sessions.handoff.gate`): evidence from the inbox, the experience notes of the first
request, a summary a compaction wrote.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import anyio

from swarmflow.context.history import is_summary
from swarmflow.context.surroundings import Surroundings
from swarmflow.core.errors import ConfigError, SwarmflowError
from swarmflow.core.history import HistoryView
from swarmflow.core.messages import Message, ModelRequest, OutputSpec
from swarmflow.core.tokens import message_units
from swarmflow.record.events import ExperienceRefused, ExperienceRetrieved
from swarmflow.sessions.handoff import gate
from swarmflow.sessions.layout import notes_block, offered, split_card, task_of, with_branch_part
from swarmflow.sessions.prefix import PrefixMeter

if TYPE_CHECKING:
    from swarmflow.sessions.parts import SessionParts
    from swarmflow.sessions.profile import AgentProfile

DEFAULT_CONTEXT_TOKENS = 120_000
"""The context budget (whole request) when the run sets none."""


@dataclass(frozen=True, slots=True)
class Asking:
    """A structured ask in progress (`sessions.structured`): which session asks, for what."""

    session: object
    spec: OutputSpec


# Set for the duration of one ask. A ContextVar rather than state on the session: a concurrent
# plain turn of the same session (another task) does not see it, and a session that a tool of
# this turn opens (`message_agent`) is told apart by its identity.
asking: ContextVar[Asking | None] = ContextVar("swarmflow_structured_ask", default=None)


class Requests:
    """How one session's requests are built: the card, the first layout, the sizes."""

    __slots__ = (
        "first_layout",
        "fixed_units",
        "prefix",
        "sent_units",
        "spec_units",
        "system_message",
    )

    def __init__(self, profile: AgentProfile, system: str | None) -> None:
        shared_card, branch_part = split_card(system)
        self.first_layout: str | None = branch_part
        """The card's session-specific part, placed after the task at the first request
        (`sessions.layout`); None once the first request is laid out."""
        self.system_message = Message("system", shared_card) if shared_card else None
        self.spec_units = profile.spec_units
        self.fixed_units = 0
        """The part of every request that compaction cannot shrink: card and tool schemas."""
        self._fix()
        self.sent_units = 0
        """The size of the last request, in estimator units."""
        self.prefix = PrefixMeter(profile.specs, profile.spec_units, profile.first_request)
        """What each request shares with the one before (a compaction rewrites it once)."""

    def _fix(self) -> None:
        card = message_units(self.system_message) if self.system_message else 0
        self.fixed_units = self.spec_units + card

    async def build(self, session: SessionParts) -> ModelRequest:
        """The next request: laid out, compacted when pressed, as it is sent."""
        run, profile = session.run, session.profile
        budget = run.deps.context_tokens or DEFAULT_CONTEXT_TOKENS
        estimator = run.state.estimator
        if self.first_layout is not None:
            await self._lay_out_first(session)
        room = int(budget / estimator.rate(profile.model_name)) - self.fixed_units
        if profile.window.pressing(session.history_units, room):
            await self._compact(session, budget)
        self.sent_units = self.fixed_units + session.history_units
        # A snapshot: the request must not change when the history grows afterwards.
        messages = HistoryView(session.history, len(session.history), self.system_message)
        return ModelRequest(
            messages=messages,
            tools=profile.specs,
            agent=session.agent.name,
            model=profile.model_name,
            max_tokens=session.agent.max_output_tokens,
            estimated_prompt_tokens=estimator.tokens(self.sent_units, profile.model_name),
            output=_wanted(session),
        )

    async def _lay_out_first(self, session: SessionParts) -> None:
        """The first request: experience notes join the shared card, and the card's
        session-specific part follows the task (`sessions.layout`). A resumed session whose
        replayed turns hold them already is left as it is."""
        branch, self.first_layout = self.first_layout or "", None
        if session.steps:
            return
        if session.run.deps.experience is not None:
            await self._offer_notes(session)
        if branch:
            session.history = with_branch_part(session.history, branch)
            session.history_units = sum(message_units(m) for m in session.history)

    async def _offer_notes(self, session: SessionParts) -> None:
        experience, name = session.run.deps.experience, session.agent.name
        task = task_of(session.history)
        try:
            notes = await anyio.to_thread.run_sync(offered, experience, name, task)
        except SwarmflowError as exc:  # a store gone bad mid-run: the session goes on
            session.emit(ExperienceRefused, reason=str(exc))
            notes = ()
        assert experience is not None
        experience.track(name, session)
        if notes:
            block = gate(session.run, name, notes_block(notes), via="experience notes")
            card = self.system_message.content if self.system_message else ""
            self.system_message = Message("system", f"{card}\n\n{block}".lstrip())
            self._fix()
        session.emit(ExperienceRetrieved, query=task[:300], notes=[n.brief() for n in notes])

    async def _compact(self, session: SessionParts, budget: int) -> None:
        """Fit the history into what the budget leaves after the role card and tool schemas:
        the agent's context policy fires its levels (docs/context.md)."""
        profile = session.profile
        rate = session.run.state.estimator.rate(profile.model_name)
        room = int(budget / rate) - self.fixed_units
        if room <= 0:
            raise ConfigError(
                f"agent {session.agent.name!r}: its role card and tool schemas alone take "
                f"about {int(self.fixed_units * rate)} tokens, more than the context budget "
                f"of {budget} tokens",
                agent=session.agent.name,
            )
        compacted = await profile.window.compact(session.history, room, surroundings(session))
        self.prefix.rewritten()
        history = [_gated(session, m) for m in compacted.history]
        session.history = history
        session.history_units = sum(message_units(m) for m in history)
        session.usage += compacted.usage  # a summary's calls are this session's spend
        session.cost += compacted.cost


def _wanted(session: SessionParts) -> OutputSpec | None:
    """The output a structured ask of this session wants (None for a plain turn)."""
    ask = asking.get()
    return ask.spec if ask is not None and ask.session is session else None


def _gated(session: SessionParts, message: Message) -> Message:
    """A summary the compaction wrote, through the handoff gate (its summariser read only
    this session's history, but what it wrote is checked as any text the model reads)."""
    if not is_summary(message) or not message.content:
        return message
    text = gate(session.run, session.agent.name, message.content, via="summary")
    return replace(message, content=text)


def surroundings(session: SessionParts) -> Surroundings:
    """What the context levels work with: where to offload, who pays for a summary."""
    profile, run = session.profile, session.run
    extra = profile.summary_ledger
    ledgers = session.caller.ledgers
    caller = replace(
        session.caller,
        ledgers=ledgers if extra is None else [*ledgers, extra],
        price=profile.summariser_price,
        purpose="summary",
        max_steps=None,
    )
    return Surroundings(
        agent=session.agent.name,
        session=session.id,
        workspace=session.workspace.root if session.workspace is not None else None,
        run_dir=run.deps.run_dir,
        model=profile.summariser,
        model_name=profile.summariser_name,
        caller=caller,
        steps=session.steps,
        estimator=run.state.estimator,
        emit=session.events,
        context_tokens=run.deps.context_tokens or DEFAULT_CONTEXT_TOKENS,
    )


def drain_inbox(session: SessionParts) -> None:
    """Passive awareness: the evidence that arrived since the last step (mentions,
    diagnostics, workspace changes) joins the context at this step boundary, as one
    message (no step and no model call of their own; `sessions.inbox`). Each item passes
    the handoff gate: one holding another agent's product without an edge is withheld."""
    run, name = session.run, session.agent.name
    note = session.inbox.drain(
        session.steps + 1, lambda item: gate(run, name, item.text, via=f"evidence ({item.source})")
    )
    if note:
        session.append(Message("user", note))
