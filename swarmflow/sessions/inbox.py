"""One inbox per session: evidence from other parts of the run, given at the step boundary.

Sources post items (`Evidence`) or are pulled at each boundary: the board's mentions for a
passive role, a language server's new diagnostics, the shared workspace's invalidations and
the commands others ran. Before the session's next model call the pending items are merged
into one user message (`render`), at most `INBOX_CAP` characters, and each is recorded as an
`evidence_delivered` event with its source. Posting never touches the history: a call in
flight keeps the request it was sent with, and the evidence waits for the next one. No source
costs a model call.

The message (docs/feedback.md):

    Evidence since your last step (2 items):

    [board] ...the item's text...

    [diagnostics] ...the item's text...

A lone board item is given as its text alone, as passive mentions always were.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from swarmflow.core.ports import Emit, Evidence
from swarmflow.core.secrets import preview
from swarmflow.record.events import EvidenceDelivered

INBOX_CAP = 12_000
"""The most characters of evidence one step's message holds; the rest is named, not shown."""
EVENT_PREVIEW = 1000
"""How much of an item its `evidence_delivered` event shows."""

Pull = Callable[[], Sequence[Evidence]]


class SessionInbox:
    """A session's pending evidence (implements `core.ports.Inbox`)."""

    __slots__ = ("_emit", "_pending", "_sources", "agent", "cap", "session")

    def __init__(self, agent: str, session: str, emit: Emit, cap: int = INBOX_CAP) -> None:
        self.agent = agent
        self.session = session
        self.cap = cap
        self._emit = emit
        self._pending: list[Evidence] = []
        self._sources: list[Pull] = []

    def post(self, item: Evidence) -> None:
        """Queue `item`; a pending item with the same key gives way to it."""
        if item.key:
            self._pending = [p for p in self._pending if p.key != item.key]
        self._pending.append(item)

    def add_source(self, pull: Pull) -> None:
        self._sources.append(pull)

    def emit(self, cls: Any, **fields: Any) -> None:
        self._emit(cls, **fields)

    @property
    def pending(self) -> int:
        """Items posted and not yet given."""
        return len(self._pending)

    def drain(self, step: int, screen: Callable[[Evidence], str] | None = None) -> str:
        """The one message for the coming model call ("" when nothing is pending); each item
        is recorded as delivered before `step`. `screen` gives each item's text as the model
        may read it (the handoff gate: a refused item's text is the refusal)."""
        for pull in self._sources:
            for item in pull():
                self.post(item)
        items, self._pending = self._pending, []
        if not items:
            return ""
        if screen is not None:
            items = [_screened(item, screen) for item in items]
        text, shown = render(items, self.cap)
        for index, item in enumerate(items):
            self._emit(
                EvidenceDelivered,
                source=item.source,
                text=preview(item.text, EVENT_PREVIEW),
                step=step,
                shown=index < shown,
            )
        return text


def _screened(item: Evidence, screen: Callable[[Evidence], str]) -> Evidence:
    text = screen(item)
    return item if text is item.text else replace(item, text=text)


def render(items: Sequence[Evidence], cap: int = INBOX_CAP) -> tuple[str, int]:
    """The evidence message for `items` and how many of them it shows whole or cut."""
    if len(items) == 1 and items[0].source == "board":
        return _clip(items[0].text, cap), 1
    parts = [f"Evidence since your last step ({len(items)} item{'s' * (len(items) != 1)}):"]
    room = cap - len(parts[0])
    shown = 0
    for item in items:
        block = f"[{item.source}] {item.text}"
        if len(block) > room and shown:
            break
        parts.append(_clip(block, max(room, 200)))
        room -= len(block) + 2
        shown += 1
    left = Counter(item.source for item in items[shown:])
    if left:
        named = ", ".join(f"{count} from {source}" for source, count in sorted(left.items()))
        parts.append(f"({sum(left.values())} more items not shown, over the size cap: {named})")
    return "\n\n".join(parts), shown


def _clip(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"\n... [{len(text) - cap} more characters]"


def board_source(hear: Callable[[], str]) -> Pull:
    """A passive role's board mentions as a source: what `hear` drains, as one item."""

    def pull() -> Sequence[Evidence]:
        note = hear()
        return (Evidence("board", note),) if note else ()

    return pull
