"""Who talked to whom, and each role's share of tokens over the run, read from the events.

The message matrix counts, per sender and receiver, the `message_agent` messages delivered
and the board messages that reached the receiver (the thread participants the sender has an
edge to), marking those that @mentioned it.
The token share splits the run, from its first model call to its last, into tenths and gives
each agent's share of the tokens drawn in each (OpenCollab's Figure 8).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
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

    def add_event(self, e: EventBase) -> None:
        """Count `e` when it is a message: a `message_agent` delivery, or a board message once
        for every participant it reached (a mention marked)."""
        if isinstance(e, MessageSent):
            self.add(e.source, e.target)
        elif isinstance(e, BoardMessagePosted):
            for receiver in e.recipients:
                if receiver != e.sender:
                    self.add(e.sender, receiver, mention=receiver in e.mentions)

    @property
    def names(self) -> list[str]:
        return sorted({n for pair in self.counts for n in pair})

    def __bool__(self) -> bool:
        return bool(self.counts)


def message_matrix(events: Iterable[EventBase]) -> MessageMatrix:
    """The matrix of a run: message_agent deliveries, board messages and mentions."""
    matrix = MessageMatrix()
    for e in events:
        matrix.add_event(e)
    return matrix


_WIDEST = 2**63 - 1


class TokenShares:
    """Every model call's time, agent and tokens, folded one event at a time and kept compact
    (20 bytes a call in arrays, not the events): the tenths are known only once the last call
    is, so each call must be placed at the end."""

    def __init__(self) -> None:
        self._t = array("d")
        self._tokens = array("q")
        self._agent = array("I")
        self._agents: dict[str, int] = {}

    def add(self, e: EventBase) -> None:
        if isinstance(e, ModelCalled) and e.agent and math.isfinite(e.t):
            self._t.append(e.t)
            self._tokens.append(max(-_WIDEST, min(_WIDEST, e.tokens_in + e.tokens_out)))
            self._agent.append(self._agents.setdefault(str(e.agent), len(self._agents)))

    def shares(self) -> dict[str, list[float]]:
        """Each agent's share (0..1) of the tokens drawn in each tenth of the run's calls."""
        if not self._t:
            return {}
        start, end = min(self._t), max(self._t)
        width = (end - start) / TENTHS or 1.0
        names = list(self._agents)
        drawn: dict[str, list[int]] = {}
        for t, tokens, agent in zip(self._t, self._tokens, self._agent, strict=True):
            tenth = min(TENTHS - 1, int((t - start) / width))
            drawn.setdefault(names[agent], [0] * TENTHS)[tenth] += tokens
        totals = [sum(row[i] for row in drawn.values()) for i in range(TENTHS)]
        return {
            agent: [row[i] / totals[i] if totals[i] else 0.0 for i in range(TENTHS)]
            for agent, row in sorted(drawn.items())
        }


def token_shares(events: Iterable[EventBase]) -> dict[str, list[float]]:
    """Each agent's share (0..1) of the tokens drawn in each tenth of the run's model calls."""
    shares = TokenShares()
    for e in events:
        shares.add(e)
    return shares.shares()


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
