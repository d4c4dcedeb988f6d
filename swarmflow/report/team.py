"""Who talked to whom, and each role's share of tokens over the run, read from the events.

The message matrix counts, per sender and receiver, the `message_agent` messages delivered
and the board messages that reached the receiver (the thread participants the sender has an
edge to), marking those that @mentioned it.
The token share splits the run, from its first model call to its last, into tenths and gives
each agent's share of the tokens drawn in each (OpenCollab's Figure 8).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from swarmflow.record.events import BoardMessagePosted, EventBase, MessageSent, ModelCalled
from swarmflow.report._format import table

TENTHS = 10


@dataclass
class MessageMatrix:
    """Counts of messages from a sender (row) to a receiver (column)."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    mentions: dict[tuple[str, str], int] = field(default_factory=dict)
    """Board messages that @mentioned the receiver, also counted in `counts`."""

    def add(self, sender: str, receiver: str, *, mention: bool = False) -> None:
        key = (sender, receiver)
        self.counts[key] = self.counts.get(key, 0) + 1
        if mention:
            self.mentions[key] = self.mentions.get(key, 0) + 1

    @property
    def names(self) -> list[str]:
        return sorted({n for pair in self.counts for n in pair})

    def __bool__(self) -> bool:
        return bool(self.counts)


def message_matrix(events: Iterable[EventBase]) -> MessageMatrix:
    """The matrix of a run: message_agent deliveries, board messages and mentions."""
    matrix = MessageMatrix()
    for e in events:
        if isinstance(e, MessageSent):
            matrix.add(e.source, e.target)
        elif isinstance(e, BoardMessagePosted):
            _board_message(matrix, e)
    return matrix


def _board_message(matrix: MessageMatrix, e: BoardMessagePosted) -> None:
    """A board message counts once for every participant it reached; a mention is marked."""
    for receiver in e.recipients:
        if receiver != e.sender:
            matrix.add(e.sender, receiver, mention=receiver in e.mentions)


def token_shares(events: Sequence[EventBase]) -> dict[str, list[float]]:
    """Each agent's share (0..1) of the tokens drawn in each tenth of the run's model calls."""
    calls = [e for e in events if isinstance(e, ModelCalled) and e.agent]
    if not calls:
        return {}
    start, end = min(c.t for c in calls), max(c.t for c in calls)
    width = (end - start) / TENTHS or 1.0
    drawn: dict[str, list[int]] = {}
    for c in calls:
        tenth = min(TENTHS - 1, int((c.t - start) / width))
        drawn.setdefault(str(c.agent), [0] * TENTHS)[tenth] += c.tokens_in + c.tokens_out
    totals = [sum(row[i] for row in drawn.values()) for i in range(TENTHS)]
    return {
        agent: [row[i] / totals[i] if totals[i] else 0.0 for i in range(TENTHS)]
        for agent, row in sorted(drawn.items())
    }


def render_matrix(matrix: MessageMatrix) -> str:
    """The matrix as a text table; empty when nobody talked."""
    if not matrix:
        return ""
    names = matrix.names
    rows: list[tuple[str, ...]] = [("from \\ to", *names)]
    for sender in names:
        rows.append((sender, *(_cell(matrix, sender, r) for r in names)))
    note = "  (board mentions in brackets, counted in the total)" if matrix.mentions else ""
    return "Who talked to whom\n" + table(rows, right=tuple(range(1, len(names) + 1))) + note


def _cell(matrix: MessageMatrix, sender: str, receiver: str) -> str:
    count = matrix.counts.get((sender, receiver), 0)
    mentions = matrix.mentions.get((sender, receiver), 0)
    if not count:
        return "-"
    return f"{count} [{mentions}]" if mentions else str(count)


def render_shares(shares: dict[str, list[float]]) -> str:
    """Token shares per tenth as a text table; empty with fewer than two agents."""
    if len(shares) < 2:
        return ""
    rows: list[tuple[str, ...]] = [("agent", *(f"{i + 1}/10" for i in range(TENTHS)))]
    for agent, row in shares.items():
        rows.append((agent, *(f"{round(100 * s)}%" for s in row)))
    text = table(rows, right=tuple(range(1, TENTHS + 1)))
    return "Share of tokens over the run (each tenth, first to last model call)\n" + text
