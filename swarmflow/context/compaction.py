"""The last levels: dropping the oldest turns, full-session compaction, and the last resort
that cuts the largest observations so that a request always fits."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from swarmflow.context.history import (
    COMPACTED_HEAD,
    SUMMARY_HEAD,
    flat,
    history_units,
    leading,
    turns,
)
from swarmflow.context.offload import save
from swarmflow.context.registry import Reduction
from swarmflow.context.surroundings import Pressure
from swarmflow.core.messages import Message
from swarmflow.core.tokens import message_units, text_units

CUT = "\n[cut to fit the context window: the first {kept} of {total} characters are shown]"
MIN_KEPT = 200
"""Characters an observation keeps when cut (unless even that cannot fit)."""
PATH_KEYS = ("path", "file", "filename", "target", "source", "directory")


async def drop_oldest(history: list[Message], pressure: Pressure) -> Reduction | None:
    """The oldest turns after the task (and its summary) go until the rest fits the target;
    the latest turn always stays."""
    keep = leading(history)
    head, groups = history[:keep], turns(history[keep:])
    total = history_units(history)
    dropped = 0
    while len(groups) > 1 and pressure.over(total):
        total -= history_units(groups.pop(0))
        dropped += 1
    if not dropped:
        return None
    return Reduction([*head, *flat(groups)], f"{dropped} oldest turns dropped")


def digest(messages: list[Message]) -> str:
    """A deterministic account of compacted turns: the calls made and the files named."""
    calls: Counter[str] = Counter()
    files: dict[str, None] = {}
    for m in messages:
        for call in m.tool_calls:
            calls[call.name] += 1
            try:
                args = json.loads(call.arguments or "{}")
            except ValueError:
                continue
            if isinstance(args, dict):
                for key in PATH_KEYS:
                    if isinstance(args.get(key), str):
                        files[args[key]] = None
    lines = [f"{len(turns(messages))} earlier turns were replaced by this note."]
    if calls:
        lines.append("Tool calls made: " + ", ".join(f"{n} × {c}" for c, n in calls.items()))
    if files:
        lines.append("Files named: " + ", ".join(list(files)[:40]))
    return "\n".join(lines)


async def compact_session(history: list[Message], pressure: Pressure) -> Reduction | None:
    """Full-session compaction: everything between the task and the latest turn becomes one
    note (an earlier summary kept in it, the calls made and the files named)."""
    groups = turns(history[1:])
    if len(groups) < 2:
        return None
    between, last = flat(groups[:-1]), groups[-1]
    summaries = [
        (m.content or "").removeprefix(SUMMARY_HEAD).strip()
        for m in between
        if m.role == "user" and (m.content or "").startswith(SUMMARY_HEAD)
    ]
    body = [COMPACTED_HEAD, *summaries, digest(between)]
    note = Message("user", "\n".join(body))
    return Reduction([history[0], note, *last], f"{len(between)} messages compacted into one")


async def cut_observations(history: list[Message], pressure: Pressure) -> Reduction | None:
    """The last resort: the largest observations are cut, each with a note saying what was
    kept (and where the whole of it went, when it could be saved), until the room fits."""
    out = list(history)
    excess = history_units(out) - pressure.room
    if excess <= 0:
        return None
    by_size = sorted(
        (i for i, m in enumerate(out) if m.role == "tool" and m.content),
        key=lambda i: -text_units(out[i].content),
    )
    cut = 0
    for i in by_size:
        if excess <= 0:
            break
        before = message_units(out[i])
        content = out[i].content or ""
        saved = await save(pressure.around, content, f"{out[i].name or 'a tool'} output")
        note = f"\n{saved}" if saved else ""
        out[i] = replace(out[i], content=_cut(content, text_units(content) - excess, note))
        excess -= before - message_units(out[i])
        cut += 1
    return Reduction(out, f"{cut} largest observations cut") if cut else None


def _cut(text: str, target_units: int, note: str) -> str:
    """`text` shortened to about `target_units` units, with a note saying what was kept."""
    tail = CUT.format(kept=len(text), total=len(text)) + note
    room = max(target_units - text_units(tail), MIN_KEPT)
    keep = min(len(text), room)  # a character is at least one unit
    while keep > 0 and text_units(text[:keep]) > room:
        keep = keep * 3 // 4  # non-ASCII text holds fewer characters per unit
    if keep >= len(text):
        return text
    return text[:keep] + CUT.format(kept=keep, total=len(text)) + note
