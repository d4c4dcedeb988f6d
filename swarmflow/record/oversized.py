"""An event too large for the readers, made to fit: the event log never writes a line that
the one reader (`core.reading`) refuses.

An event whose line is over `MAX_EVENT_LINE` (a `compact` over a few hundred thousand
outcomes, a tool result of tens of MiB) is written cut: its longest texts first (each cut
to 64 KiB, then 4 KiB, 256 and 16 characters, ending `... [cut: N more characters]`, when
that makes it shorter), then its longest lists (kept to their first 10,000, 1,000, 100, 10
items, then none), until the line fits and the event is still valid; the envelope (run,
sequence number, times, agent, session, branch, type) is never cut. An `event_oversized`
event follows it, naming its type, its size and the cap (`cut=True`). An event that no cut
makes fit and valid is not written: the `event_oversized` event stands at its sequence
number in its place (`cut=False`). So the record stays one whole, readable, contiguous log.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from swarmflow.core.reading import MAX_LINE
from swarmflow.record.events import EventBase
from swarmflow.record.jsonline import json_line

MAX_EVENT_LINE = MAX_LINE - 1
"""The longest event line written: the readers' cap, less the newline they count in it."""
ENVELOPE = frozenset(EventBase.model_fields) | {"type"}
_TEXTS = (64 << 10, 4 << 10, 256, 16)
_LISTS = (10_000, 1_000, 100, 10, 0)
_MARK_ROOM = 40
"""Characters a cut's own mark takes: a text no longer than its limit and this is kept."""


def cut_to_fit(
    line: bytes, cls: type[EventBase], cap: int = MAX_EVENT_LINE
) -> tuple[dict[str, Any], bytes] | None:
    """The event of `line` (already scrubbed) cut until its line holds at most `cap` bytes
    and it is still a valid `cls`, with that line; None when no cut does it."""
    data = json.loads(line)
    head = {k: v for k, v in data.items() if k in ENVELOPE}
    body = {k: v for k, v in data.items() if k not in ENVELOPE}
    steps = [(texts, None) for texts in _TEXTS] + [(_TEXTS[-1], items) for items in _LISTS]
    for texts, items in steps:
        try:
            cut = {**head, **_cut(body, texts, items)}
        except RecursionError:
            return None
        cut_line = json_line(cut)
        if len(cut_line) <= cap and _valid(cls, cut):
            return cut, cut_line
    return None


def _cut(value: Any, texts: int, items: int | None) -> Any:
    """`value` with texts longer than `texts` cut, and lists longer than `items` (None: any
    length) kept to their first `items`."""
    if isinstance(value, str):
        if len(value) <= texts + _MARK_ROOM:  # a cut would not make it shorter
            return value
        return f"{value[:texts]}... [cut: {len(value) - texts:,} more characters]"
    if isinstance(value, dict):
        return {key: _cut(item, texts, items) for key, item in value.items()}
    if isinstance(value, list):
        kept = value if items is None else value[:items]
        return [_cut(item, texts, items) for item in kept]
    return value


def _valid(cls: type[EventBase], data: dict[str, Any]) -> bool:
    try:
        cls.model_validate(data)
    except ValidationError:
        return False
    return True
