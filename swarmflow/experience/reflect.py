"""Self-reflection at a run's end: each agent's sessions distilled into a few short notes by
one budgeted model call per agent, and stored for later runs.

The call is the metered call (`calls.metered`, purpose "reflection"), charged as any call of
the agent is (the run's ledger and the agent's allowance): a run whose budget is spent, or a
rail that vetoes it, writes no notes (`experience_refused`); the notes written are recorded as
`experience_written`.
"""

from __future__ import annotations

import re
from functools import partial

import anyio

from swarmflow.calls.ledgers import charged_ledgers
from swarmflow.calls.metered import Caller, metered_call
from swarmflow.core.errors import SwarmflowError
from swarmflow.core.experience_port import NewNote, Trajectory
from swarmflow.core.messages import Message, ModelRequest
from swarmflow.core.tokens import message_units
from swarmflow.experience.run_notes import RunExperience
from swarmflow.experience.store import KINDS
from swarmflow.experience.trajectory import trajectory_text
from swarmflow.record.events import EventBase, ExperienceRefused, ExperienceWritten
from swarmflow.runtime.context import RunContext

REFLECT_PROMPT = """\
You review the finished work of one agent of a multi-agent coding run and write experience \
notes that later runs on similar tasks will be shown. Write at most five lines, each starting \
with "worked:" (an approach or command that helped), "failed:" (something that did not work, \
and why) or "note:" (a fact about this repository worth knowing). One concrete sentence each: \
name the files, commands and errors. Write nothing else; write no line at all when nothing \
is worth keeping."""
"""The reflector's instructions (docs/context.md shows them)."""
REFLECTION_TOKENS = 400
MAX_NOTES = 5
NOTE_CHARS = 400
_LINE = re.compile(r"^\s*[-*]?\s*(worked|failed|note)\s*:\s*(.+?)\s*$", re.IGNORECASE)


def parse_notes(text: str) -> list[tuple[str, str]]:
    """The (kind, text) notes in the reflector's answer; other lines are ignored."""
    found = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(1).lower() in KINDS:
            found.append((m.group(1).lower(), m.group(2)[:NOTE_CHARS]))
    return found[:MAX_NOTES]


async def reflect_run(run: RunContext, experience: RunExperience) -> None:
    """Reflect on every agent that had sessions; a refusal for one does not stop the next."""
    for agent, sessions in experience.sessions.items():
        await _reflect(run, experience, agent, sessions)


async def _reflect(
    run: RunContext, experience: RunExperience, agent: str, sessions: list[Trajectory]
) -> None:
    log = run.deps.log
    task = next((m.content or "" for m in sessions[0].history if m.role == "user"), "")
    try:
        declared = run.deps.team.get(agent)
        model = run.deps.model_for(declared)
    except SwarmflowError as exc:
        log.emit(ExperienceRefused, agent=agent, reason=str(exc))
        return
    name: str | None = getattr(model, "name", None)
    where = f"Repository: {experience.repository}\n" if experience.repository else ""
    body = f"Task: {task[:2000]}\n{where}\n{trajectory_text(sessions)}"
    messages = [Message("system", REFLECT_PROMPT), Message("user", body)]
    units = sum(message_units(m) for m in messages)
    request = ModelRequest(
        messages=messages,
        agent=agent,
        model=name,
        max_tokens=REFLECTION_TOKENS,
        estimated_prompt_tokens=run.state.estimator.tokens(units, name),
    )
    caller = Caller(
        run,
        agent,
        session="",
        branch="",
        ledgers=charged_ledgers(run, run.state.ledger, declared),
        price=run.deps.prices.price(name),
        emit=partial(_emit_for, run, agent),
        purpose="reflection",
        expected_output=REFLECTION_TOKENS,
    )
    try:
        called = await metered_call(caller, model, request, sent_units=units)
    except anyio.get_cancelled_exc_class():
        raise
    except (SwarmflowError, OSError, ValueError) as exc:
        log.emit(ExperienceRefused, agent=agent, reason=f"the reflection failed: {exc}")
        return
    if called.refusal is not None or called.response is None:
        why = called.refusal.detail if called.refusal is not None else "vetoed"
        log.emit(ExperienceRefused, agent=agent, reason=why)
        return
    answer, cost = called.response, called.cost
    new = [
        NewNote(agent, kind, text, task[:500], experience.repository, experience.run_id)
        for kind, text in parse_notes(answer.text or "")
    ]
    try:
        redactor = run.deps.log.redactor  # the run's: its secrets made at run time too
        stored = await anyio.to_thread.run_sync(experience.store.add, new, redactor) if new else []
    except SwarmflowError as exc:
        log.emit(ExperienceRefused, agent=agent, reason=str(exc))
        return
    log.emit(
        ExperienceWritten,
        agent=agent,
        store=str(experience.store.path),
        notes=[n.brief() for n in stored],
        cost=cost,
    )


def _emit_for(run: RunContext, agent: str, cls: type[EventBase], **fields: object) -> None:
    """Record a reflection's event under its agent (it belongs to no session)."""
    fields["agent"] = agent
    run.deps.log.record(cls, fields)
