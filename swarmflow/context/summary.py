"""Summarisation by a model: the older turns become a summary written by the policy's
summariser (or the agent's own model), with a prompt that keeps what the agent will need.

The summary is incremental: a summary already in the history is given to the next one, which
replaces it, so what the first one kept is kept again. Its call is the metered call
(`Surroundings.ask`, purpose "summary"): reserved on the session's ledgers, its rails, the
write barrier and the journal, settled and recorded as any call; when the budget or a rail
refuses it, or the summariser fails, the level is refused (`context_level_refused`) and the
deterministic levels after it fit the request.
"""

from __future__ import annotations

from swarmflow.context.compaction import cut_observations
from swarmflow.context.history import SUMMARY_HEAD, history_units, is_summary, old_end, turns
from swarmflow.context.registry import Reduction
from swarmflow.context.surroundings import Pressure
from swarmflow.core.messages import Message
from swarmflow.core.tokens import message_units, text_units

SUMMARY_PROMPT = """\
You compress the earlier part of a coding agent's working session so that it can go on \
within its context window. The agent will read your summary instead of the turns below, so \
anything you leave out is lost to it. Write short bullet points under these headings:

Decisions: each decision made and why, with the step it was made in when the turns say.
Facts found: what was learned about the code, the tests, the tools and the environment.
Files: every file path read, changed or created, and what was done to each.
Open questions: what is still unknown, failing or left to do.

Keep exact file paths, names, commands, numbers and error messages. Carry over everything an \
earlier summary (given first) says that still holds. Leave out greetings and anything said \
twice. Do not invent anything that the turns do not say."""
"""The summariser's instructions (docs/context.md shows them)."""


def transcript(messages: list[Message]) -> str:
    """The turns as plain text for the summariser: who said what, which tools ran."""
    lines: list[str] = []
    for m in messages:
        if m.role == "tool":
            lines.append(f"[result of {m.name or 'a tool'}]\n{m.content or ''}")
            continue
        if m.content:
            lines.append(f"[{m.role}]\n{m.content}")
        for call in m.tool_calls:
            lines.append(f"[{m.role} called {call.name}] {call.arguments}")
    return "\n\n".join(lines)


def _messages_for(old: list[Message]) -> list[Message]:
    """The summariser's messages: its prompt and the older turns."""
    return [Message("system", SUMMARY_PROMPT), Message("user", transcript(old))]


async def _fitting(old: list[Message], pressure: Pressure) -> list[Message]:
    """The older turns, their largest observations cut, so the summariser's own request fits
    the context budget with room for the summary."""
    rate = pressure.around.estimator.rate(pressure.around.model_name)
    room = int(pressure.around.context_tokens / rate) - int(pressure.policy.summary_tokens / rate)
    room -= message_units(Message("system", SUMMARY_PROMPT)) + 64
    if history_units(old) <= room:
        return old
    inner = Pressure(max(room, 1), max(room, 1), pressure.policy, pressure.around)
    cut = await cut_observations(old, inner)
    return cut.history if cut is not None else old


async def summarise(history: list[Message], pressure: Pressure) -> Reduction | None:
    """The older turns (and an earlier summary) replaced by one summary message."""
    end = old_end(history, pressure.policy.keep_recent)
    old = history[1:end]
    if len(turns([m for m in old if not is_summary(m)])) < 2:
        return None  # one turn or none: nothing a summary would shorten
    messages = _messages_for(await _fitting(old, pressure))
    answer = await pressure.around.ask(
        messages, max_tokens=pressure.policy.summary_tokens, level="summarise"
    )
    if answer is None:
        return None
    summary = Message("user", f"{SUMMARY_HEAD}\n{_capped(answer.text.strip(), pressure)}")
    removed = f"{len(old)} older messages summarised by {pressure.around.model_name or 'the model'}"
    return Reduction([history[0], summary, *history[end:]], removed, answer.cost, answer.usage)


def _capped(text: str, pressure: Pressure) -> str:
    """The summary cut to what its call was allowed to write: a summariser that ignores its
    `max_tokens` cannot make the request it was meant to shorten outgrow the budget."""
    rate = pressure.around.estimator.rate(pressure.around.model_name)
    most = int(pressure.policy.summary_tokens / rate)
    if text_units(text) <= most:
        return text
    keep = max(most - 40, 0)
    while keep and text_units(text[:keep]) > most - 40:
        keep = keep * 3 // 4  # non-ASCII text holds fewer characters per unit
    return text[:keep] + "\n[summary cut to its budget]"
