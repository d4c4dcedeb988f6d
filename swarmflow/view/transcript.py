"""Each session's whole conversation, read back from the run's events and, once the run has
ended, its journal: what the session was asked, every model call and the tool calls it made,
each tool's result, evidence and messages it was given, board posts, refusals, its answer.

The events hold every step (tool results cut to what the log keeps); the journal adds the
prompt and the final text of each finished call, and the words of each model answer that also
called tools (the events name the tools only), each clipped to `MAX_TEXT`. The journal is read
only when the run has ended, a record at a time (`core.reading.LineTail`: nothing is cut off
it, no record is held past its parts).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import LineTail
from swarmflow.record.events import (
    AgentFinished,
    BoardMessagePosted,
    ContextCompacted,
    EventBase,
    EvidenceDelivered,
    HarnessAnswered,
    HarnessEnded,
    HarnessStarted,
    HarnessToolExecuted,
    MentionDelivered,
    MessageSent,
    ModelCalled,
    SessionEnded,
    SessionStarted,
    SessionTold,
    ToolExecuted,
)
from swarmflow.record.files import JOURNAL_FILE
from swarmflow.record.records import CallFinished, ModelCallFinished, parse_record
from swarmflow.report.digest import refusal_text

MAX_TEXT = 20_000
"""The most characters of one part shown (a prompt, an answer, a tool's result)."""


@dataclass(frozen=True, slots=True)
class Part:
    """One step of a transcript."""

    order: float
    """Where it falls: the seq of the event it comes from (a journal part between two)."""
    kind: str
    """request, model, call, result, refusal, evidence, message, board, session, answer, note."""
    title: str
    body: str = ""
    ok: bool = True
    at: tuple[str, int] | None = None
    """A model call's purpose and step: where the journal's words of its answer go."""


def _args(value: dict[str, Any] | str) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _model(e: ModelCalled) -> list[Part]:
    calls = f" → {', '.join(e.tool_calls)}" if e.tool_calls else ""
    why = f" ({e.purpose})" if e.purpose else ""
    title = f"model call {e.step}{why}: {e.tokens_in:,} in, {e.tokens_out:,} out{calls}"
    body = f"{e.model or ''} · {e.latency:.2f}s · {e.finish_reason}"
    return [Part(e.seq, "model", title, body, at=(e.purpose, e.step))]


def _tool(e: ToolExecuted) -> list[Part]:
    failed = "" if e.ok else " (failed)"
    return [
        Part(e.seq - 0.5, "call", f"{e.tool}({e.call_id}){failed}", _args(e.arguments), e.ok),
        Part(e.seq, "result", f"result of {e.tool}", e.result, e.ok),
    ]


def _harness_tool(e: HarnessToolExecuted) -> list[Part]:
    back = "" if e.fed_back else " (its result never came back)"
    title = f"{e.tool}({e.call_id}), run by {e.harness}{back}"
    call = Part(e.seq - 0.5, "call", title, _args(e.arguments))
    return [call, Part(e.seq, "result", f"result of {e.tool}", e.result)] if e.fed_back else [call]


def _harness_answer(e: HarnessAnswered) -> list[Part]:
    calls = f" → {', '.join(e.tool_calls)}" if e.tool_calls else ""
    return [Part(e.seq, "answer", f"{e.harness} step {e.step}: the model said{calls}", e.text)]


def _started(e: SessionStarted) -> list[Part]:
    tools = ", ".join(e.tools) or "no tools"
    return [Part(e.seq, "session", f"session {e.session} of {e.agent} started", tools)]


def _ended(e: SessionEnded) -> list[Part]:
    detail = f": {e.detail}" if e.detail else ""
    title = f"session ended {e.state} ({e.reason}){detail}"
    return [
        Part(e.seq, "session", title, f"{e.steps} steps, {e.tokens:,} tokens", e.state == "done")
    ]


def _evidence(e: EvidenceDelivered) -> list[Part]:
    shown = "" if e.shown else " (not shown)"
    return [Part(e.seq, "evidence", f"evidence from {e.source}{shown}", e.text)]


def _message(e: MessageSent) -> list[Part]:
    return [Part(e.seq, "message", f"message {e.source} → {e.target} via {e.via}", e.text)]


def _told(e: SessionTold) -> list[Part]:
    return [Part(e.seq, "message", "told (no model call)", e.text)]


def _posted(e: BoardMessagePosted) -> list[Part]:
    to = f" @{', @'.join(e.mentions)}" if e.mentions else ""
    return [Part(e.seq, "board", f"board #{e.thread}: {e.sender}{to}", e.text)]


def _mention(e: MentionDelivered) -> list[Part]:
    title = f"mention from {e.sender} in #{e.thread} delivered ({e.mode})"
    return [Part(e.seq, "board", title)]


def _compacted(e: ContextCompacted) -> list[Part]:
    title = f"context compacted ({e.level}): {e.messages_before} → {e.messages_after} messages"
    return [Part(e.seq, "note", title, e.removed)]


def _finished(e: AgentFinished) -> list[Part]:
    return [Part(e.seq, "answer", "answer (preview)", e.preview)] if e.preview else []


def _harness_started(e: HarnessStarted) -> list[Part]:
    where = "in the sandbox" if e.sandboxed else "on the host"
    return [Part(e.seq, "session", f"harness {e.harness} started {where}", e.program)]


def _harness_ended(e: HarnessEnded) -> list[Part]:
    title = f"harness {e.harness} ended: {e.reason} (exit {e.exit_code})"
    return [Part(e.seq, "session", title, e.stderr, e.exit_code == 0)]


_PARTS: dict[type[EventBase], Callable[[Any], list[Part]]] = {
    ModelCalled: _model,
    ToolExecuted: _tool,
    HarnessToolExecuted: _harness_tool,
    HarnessAnswered: _harness_answer,
    SessionStarted: _started,
    SessionEnded: _ended,
    EvidenceDelivered: _evidence,
    MessageSent: _message,
    SessionTold: _told,
    BoardMessagePosted: _posted,
    MentionDelivered: _mention,
    ContextCompacted: _compacted,
    AgentFinished: _finished,
    HarnessStarted: _harness_started,
    HarnessEnded: _harness_ended,
}


def parts_of(e: EventBase) -> list[Part]:
    """The transcript parts one event makes (a refusal of any kind is one part)."""
    make = _PARTS.get(type(e))
    if make is not None:
        return make(e)
    text = refusal_text(e)
    return [Part(e.seq, "refusal", "refused", text, False)] if text else []


def transcripts(events: Iterable[EventBase], run_dir: Path | None) -> dict[str, list[Part]]:
    """Every session's parts in order; with `run_dir` (a run that has ended), the journal's
    prompts and answers too."""
    found: dict[str, list[Part]] = {}
    for e in events:
        if e.session:
            found.setdefault(e.session, []).extend(parts_of(e))
    if run_dir is not None:
        for session, parts in journal_parts(run_dir, found).items():
            found.setdefault(session, []).extend(parts)
    return {s: sorted(parts, key=lambda p: p.order) for s, parts in found.items()}


def journal_parts(
    run_dir: Path, kept: Mapping[str, Sequence[Part]], most: int = 0
) -> dict[str, list[Part]]:
    """Per session of `kept`, each finished call's prompt (at the call's start) and its
    answer, and the words of each kept model call whose answer also called tools (after that
    call), from the run's journal, read one record at a time and never cut (`most`: keep only
    each session's last `most` calls; 0: all)."""
    places = {(s, p.at): p.order for s, parts in kept.items() for p in parts if p.at is not None}
    calls: dict[str, deque[CallFinished]] = {}
    words: dict[str, list[Part]] = {}
    for record in _records(run_dir / JOURNAL_FILE):
        if isinstance(record, CallFinished):
            if record.session in kept:
                held = calls.setdefault(record.session, deque(maxlen=most or None))
                held.append(_clipped(record))
            continue
        # A harness's words are in its own events (`harness_answered`): a session's turns only.
        place = places.get((record.session, ("turn", record.step)))
        if place is not None and record.key.purpose == "turn" and record.tool_calls and record.text:
            title = f"model call {record.step}: the model said"
            said = Part(place + 0.25, "answer", title, _clip(record.text))
            words.setdefault(record.session, []).append(said)
    found = {session: _parts_of_calls(held) for session, held in calls.items()}
    for session, parts in words.items():
        found.setdefault(session, []).extend(parts)
    return found


_KINDS_READ = (b'"call_finished"', b'"model_call_finished"')


def _records(path: Path) -> Iterator[CallFinished | ModelCallFinished]:
    """The journal's `call_finished` and `model_call_finished` records (the others are not
    parsed); a damaged journal ends the reading, leaving the events' transcript."""
    if not path.is_file() or path.is_symlink():
        return
    tail = LineTail(path, "a run journal")
    try:
        for _number, raw in tail.lines():
            head = raw[:48]  # where a record's `kind` is
            if not any(kind in head for kind in _KINDS_READ):
                continue
            record = parse_record(raw)
            if isinstance(record, CallFinished | ModelCallFinished):
                yield record
    except (ConfigError, OSError, ValueError):
        return


def _clipped(record: CallFinished) -> CallFinished:
    """What a transcript shows of a call, and no more: its prompt and its text, clipped."""
    asked = record.given or _asked(record.messages)
    return record.model_copy(
        update={"given": _clip(asked), "text": _clip(record.text), "messages": None,
                "value": None, "patch": None}
    )  # fmt: skip


def _parts_of_calls(calls: Iterable[CallFinished]) -> list[Part]:
    parts: list[Part] = []
    last = -1.0
    for data in sorted(calls, key=lambda d: d.event_seq):
        if data.given:
            parts.append(Part(last + 0.25, "request", "asked", data.given))
        if data.text:
            parts.append(Part(data.event_seq - 0.25, "answer", "answered", data.text))
        last = data.event_seq
    return parts


def _asked(messages: list[Any] | None) -> str:
    """A session turn's own words: the user messages it began with."""
    said = [m.content for m in messages or () if m.role == "user" and m.content]
    return "\n\n".join(str(s) for s in said)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… ({len(text):,} characters)"


__all__ = ["MAX_TEXT", "Part", "journal_parts", "parts_of", "transcripts"]
