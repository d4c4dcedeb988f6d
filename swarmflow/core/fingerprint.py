"""Fingerprints of agent products, so that text copied into a plain string keeps its origin.

Text is compared in a normal form: letters and digits only, case-folded (`normalize`), so a
change of case, whitespace, punctuation or quoting does not hide an excerpt. Two texts match
where they share a run of at least `MATCH_CHARS` normalised characters.

Each product (an answer, a structured value as rendered, a patch's diff) becomes one or more
pieces owned by its agent. What the agent was given by the flow and that no agent produced is
cut out first: an agent that echoes the task does not own the task. What it was given that
another agent produced stays in its pieces, so it co-owns a relay it was allowed to receive.

The index keeps every `GRAM`-character window of every piece; a check looks up the windows of
the outgoing text at every `STRIDE`-th position and extends each hit both ways. Any shared run
of `MATCH_CHARS` or more contains one looked-up window (STRIDE + GRAM - 1 == MATCH_CHARS), so
the check finds every such run while reading one window in nine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

MATCH_CHARS = 20
"""The shortest shared run (letters and digits) that counts as a copy: about four words, or
one long identifier, hash or key. Shorter runs are common phrases that unrelated texts share by
chance ("the function returns" is 19)."""
GRAM = 12
STRIDE = MATCH_CHARS - GRAM + 1
MAX_HITS = STRIDE + 1
"""Positions of one window kept per piece. Past that the piece repeats itself (padding, a
periodic run); the first STRIDE + 1 positions still align with any run of the repeat."""
MAX_PRODUCT_CHARS = 1 << 18
"""Of a larger product only the first 256 K normalised characters are fingerprinted."""
_STEP = 64
_NOISE = re.compile(r"[\W_]+")
_ALNUM = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_DROP = bytes(b for b in range(128) if b not in _ALNUM)
_ASCII_LOWER = bytes.maketrans(_ALNUM[36:], _ALNUM[10:36])

Span = tuple[int, int]


def normalize(text: str) -> str:
    """Letters and digits only, case-folded: the form in which texts are compared."""
    if text.isascii():  # the common case, in C: the same result as the general one, 10x faster
        return text.encode().translate(_ASCII_LOWER, _ASCII_DROP).decode()
    return _NOISE.sub("", text).casefold()


class FingerprintIndex:
    """Maps windows of agent products to the pieces (owner, normalised text) holding them."""

    __slots__ = ("_grams", "_owners", "_texts")

    def __init__(self) -> None:
        self._owners: list[str] = []
        self._texts: list[str] = []
        self._grams: dict[str, list[tuple[int, int]]] = {}

    def __len__(self) -> int:
        return len(self._texts)

    def add(self, agent: str, product: str, given: str = "") -> None:
        """Record `agent`'s product, minus the runs it was given that no agent produced."""
        own = normalize(product)[:MAX_PRODUCT_CHARS]
        if len(own) < MATCH_CHARS:
            return
        spans = [(0, len(own))]
        if given:
            spans = _subtract(spans, self._unowned_given(own, normalize(given)))
        for start, end in spans:
            if end - start >= MATCH_CHARS:
                self._add_piece(agent, own[start:end])

    def owners(self, text: str) -> set[str]:
        """Every agent that shares a run of at least MATCH_CHARS with `text`."""
        if not self._texts or len(text) < MATCH_CHARS:
            return set()
        return {
            self._owners[piece] for piece, _, _ in _runs(self._grams, self._texts, normalize(text))
        }

    def unreached(self, text: str, allowed: Callable[[str], bool]) -> list[str]:
        """Owners of runs in `text` that may not reach the receiver, sorted.

        A run is excused where an owner that `allowed` accepts produced the same text (a relay
        along declared edges); what remains of a run, if still MATCH_CHARS long, is refused.
        """
        if not self._texts or len(text) < MATCH_CHARS:
            return []
        excused: list[Span] = []
        refused: dict[str, list[Span]] = {}
        for piece, start, end in _runs(self._grams, self._texts, normalize(text)):
            owner = self._owners[piece]
            if allowed(owner):
                excused.append((start, end))
            else:
                refused.setdefault(owner, []).append((start, end))
        excused = _merge(excused)
        return sorted(
            owner
            for owner, spans in refused.items()
            if any(e - s >= MATCH_CHARS for s, e in _subtract(_merge(spans), excused))
        )

    def _add_piece(self, agent: str, piece: str) -> None:
        index = len(self._texts)
        self._owners.append(agent)
        self._texts.append(piece)
        _index_windows(self._grams, index, piece)

    def _unowned_given(self, own: str, given: str) -> list[Span]:
        """Spans of `own` that also occur in `given` and that no recorded product holds."""
        grams: dict[str, list[tuple[int, int]]] = {}
        _index_windows(grams, 0, own)
        shared = _merge(
            [(p, p + end - start) for _, start, end, p in _runs_at(grams, [own], given)]
        )
        cut: list[Span] = []
        for start, end in shared:
            region = own[start:end]
            produced = [
                (start + s, start + e) for _, s, e in _runs(self._grams, self._texts, region)
            ]
            cut.extend(_subtract([(start, end)], _merge(produced)))
        return cut


def _index_windows(grams: dict[str, list[tuple[int, int]]], piece: int, text: str) -> None:
    seen: dict[str, int] = {}
    for i in range(len(text) - GRAM + 1):
        gram = text[i : i + GRAM]
        count = seen.get(gram, 0)
        if count < MAX_HITS:
            seen[gram] = count + 1
            grams.setdefault(gram, []).append((piece, i))


def _runs(
    grams: dict[str, list[tuple[int, int]]], texts: list[str], query: str
) -> list[tuple[int, int, int]]:
    """(piece, start, end) of every maximal run of at least MATCH_CHARS that `query` shares."""
    return [(piece, start, end) for piece, start, end, _ in _runs_at(grams, texts, query)]


def _runs_at(
    grams: dict[str, list[tuple[int, int]]], texts: list[str], query: str
) -> list[tuple[int, int, int, int]]:
    """Like `_runs`, with where each run starts in its piece."""
    found: list[tuple[int, int, int, int]] = []
    covered: dict[tuple[int, int], int] = {}  # (piece, diagonal) -> end of a run already found
    for i in range(0, len(query) - GRAM + 1, STRIDE):
        for piece, offset in grams.get(query[i : i + GRAM], ()):
            diagonal = (piece, offset - i)
            if covered.get(diagonal, -1) > i:
                continue
            text = texts[piece]
            back = _common_before(query, i, text, offset)
            end = i + GRAM + _common_after(query, i + GRAM, text, offset + GRAM)
            start = i - back
            covered[diagonal] = end
            if end - start >= MATCH_CHARS:
                found.append((piece, start, end, offset - back))
    return found


def _common_after(a: str, i: int, b: str, j: int) -> int:
    """How many characters `a[i:]` and `b[j:]` share from their start."""
    limit = min(len(a) - i, len(b) - j)
    n = 0
    while n + _STEP <= limit and a[i + n : i + n + _STEP] == b[j + n : j + n + _STEP]:
        n += _STEP
    while n < limit and a[i + n] == b[j + n]:
        n += 1
    return n


def _common_before(a: str, i: int, b: str, j: int) -> int:
    """How many characters `a[:i]` and `b[:j]` share from their end."""
    limit = min(i, j)
    n = 0
    while n + _STEP <= limit and a[i - n - _STEP : i - n] == b[j - n - _STEP : j - n]:
        n += _STEP
    while n < limit and a[i - n - 1] == b[j - n - 1]:
        n += 1
    return n


def _merge(spans: Iterable[Span]) -> list[Span]:
    """Sorted, overlapping or touching spans joined."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _subtract(spans: list[Span], cut: list[Span]) -> list[Span]:
    """`spans` (sorted, disjoint) minus `cut` (sorted, disjoint)."""
    out: list[Span] = []
    for start, end in spans:
        pos = start
        for c_start, c_end in cut:
            if c_end <= pos or c_start >= end:
                continue
            if c_start > pos:
                out.append((pos, c_start))
            pos = max(pos, c_end)
        if pos < end:
            out.append((pos, end))
    return out
