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

What an agent was given grows with its session (its card, then every message sent to it).
`GivenText` keeps it normalised and indexed the other way round (a window at every `STRIDE`-th
position, looked up at every position of the product), and takes each message once, so the
cut of turn 500 costs the length of that turn's answer, not of the 500 messages before it.
"""

from __future__ import annotations

import re
import unicodedata
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
_MANY = "\x00many"
"""A window that more than one agent's products hold (no agent name has a NUL)."""
_NOISE = re.compile(r"[\W_]+")
_ALNUM = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_DROP = bytes(b for b in range(128) if b not in _ALNUM)
_ASCII_LOWER = bytes.maketrans(_ALNUM[36:], _ALNUM[10:36])

Span = tuple[int, int]


def normalize(text: str) -> str:
    """Letters and digits only, case-folded, in Unicode's compatibility form (NFKC): the form
    in which texts are compared, so a full-width or ligature copy is the same copy."""
    if text.isascii():  # the common case, in C: the same result as the general one, 10x faster
        return text.encode().translate(_ASCII_LOWER, _ASCII_DROP).decode()
    folded = _NOISE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    return unicodedata.normalize("NFKC", folded)


class FingerprintIndex:
    """Maps windows of agent products to the pieces (owner, normalised text) holding them."""

    __slots__ = ("_gram_owner", "_grams", "_owners", "_pieces", "_texts", "_wholes")

    def __init__(self) -> None:
        self._owners: list[str] = []
        self._texts: list[str] = []
        self._grams: dict[str, list[tuple[int, int]]] = {}
        self._gram_owner: dict[str, str] = {}
        """Each window's owner, or `_MANY`: whether a text repeats another agent's product is
        then one lookup per window read, not a walk of every piece that holds the window."""
        self._pieces: set[tuple[str, str]] = set()
        self._wholes: dict[str, set[str]] = {}
        """Whole products cut by what their agent was given, normalised, with their owners."""

    def __len__(self) -> int:
        return len(self._texts) + len(self._wholes)

    def add(self, agent: str, product: str, given: GivenText | str = "") -> None:
        """Record `agent`'s product, minus the runs it was given that no agent produced, and
        minus the runs of other agents' products it was not given (see `_not_its_own`)."""
        own = normalize(product)[:MAX_PRODUCT_CHARS]
        if len(own) < MATCH_CHARS:
            return
        if isinstance(given, str):
            given = GivenText.of(given)
        given_runs = _merge((start, end) for _, start, end in given.runs_in(own))
        echoed = self._unowned_given(own, given_runs)
        foreign = self._not_its_own(agent, own, given_runs)
        spans = _subtract([(0, len(own))], _merge([*echoed, *foreign]))
        for start, end in spans:
            if end - start >= MATCH_CHARS:
                self._add_piece(agent, own[start:end])
        if spans and echoed and not foreign:
            # An answer that echoes its question ("Paris is the capital of France.") keeps
            # too little of its own to match; copied whole, it is still the agent's answer.
            # (One that repeats another agent's product is not its own, whole or in part.)
            self._wholes.setdefault(own, set()).add(agent)

    def owners(self, text: str) -> set[str]:
        """Every agent that shares a run of at least MATCH_CHARS with `text`."""
        if not len(self) or len(text) < MATCH_CHARS:
            return set()
        query = normalize(text)
        found = {self._owners[piece] for piece, _, _ in _runs(self._grams, self._texts, query)}
        for owners, _ in self._whole_runs(query):
            found.update(owners)
        return found

    def unreached(self, text: str, allowed: Callable[[str], bool]) -> list[str]:
        """Owners of runs in `text` that may not reach the receiver, sorted.

        A run is excused where an owner that `allowed` accepts produced the same text (a relay
        along declared edges); what remains of a run, if still MATCH_CHARS long, is refused. A
        relay excuses a run only where the two share MATCH_CHARS or more: an allowed text that
        ends in a short sliver of the refused one (an earlier post of growing excerpts) does not
        lend its cover to the rest.
        """
        if not len(self) or len(text) < MATCH_CHARS:
            return []
        query = normalize(text)
        excused: list[Span] = []
        refused: dict[str, list[Span]] = {}
        runs = [
            (self._owners[piece], (start, end))
            for piece, start, end in _runs(self._grams, self._texts, query)
        ]
        runs += [(owner, span) for owners, span in self._whole_runs(query) for owner in owners]
        for owner, span in runs:
            if allowed(owner):
                excused.append(span)
            else:
                refused.setdefault(owner, []).append(span)
        return sorted(
            owner
            for owner, spans in refused.items()
            if any(_left_over(span, excused) >= MATCH_CHARS for span in _merge(spans))
        )

    def _whole_runs(self, query: str) -> list[tuple[set[str], Span]]:
        """(owners, span) of each whole product that `query` holds, at its first place."""
        found = []
        for whole, owners in self._wholes.items():
            start = query.find(whole)
            if start >= 0:
                found.append((owners, (start, start + len(whole))))
        return found

    def _add_piece(self, agent: str, piece: str) -> None:
        if (agent, piece) in self._pieces:  # the same answer again adds nothing to match
            return
        self._pieces.add((agent, piece))
        index = len(self._texts)
        self._owners.append(agent)
        self._texts.append(piece)
        for gram in _index_windows(self._grams, index, piece):
            if self._gram_owner.setdefault(gram, agent) != agent:
                self._gram_owner[gram] = _MANY

    def _not_its_own(self, agent: str, own: str, given_runs: list[Span]) -> list[Span]:
        """Spans of `own` that repeat another agent's product without having been given to
        `agent`: a relay it received along an edge is its to pass on, a copy it came by any
        other way (excerpts of a tool result, a file, its own earlier relays) is not. Without
        this cut, growing excerpts of 19 new characters each would make the agent co-own a
        whole product it never received."""
        owner_of = self._gram_owner
        windows = range(0, len(own) - GRAM + 1, STRIDE)
        if all(owner_of.get(own[i : i + GRAM], agent) == agent for i in windows):
            return []  # every shared run of MATCH_CHARS holds one of these windows
        foreign = _merge(
            (start, end)
            for piece, start, end in _runs(self._grams, self._texts, own)
            if self._owners[piece] != agent
        )
        return _subtract(foreign, given_runs) if foreign else []

    def _unowned_given(self, own: str, given_runs: list[Span]) -> list[Span]:
        """Spans of `own` that also occur in what the agent was given and that no recorded
        product holds."""
        cut: list[Span] = []
        for start, end in given_runs:
            region = own[start:end]
            produced = [
                (start + s, start + e) for _, s, e in _runs(self._grams, self._texts, region)
            ]
            cut.extend(_subtract([(start, end)], _merge(produced)))
        return cut


class GivenText:
    """What the flow gave one agent session, normalised and indexed as it grows.

    The text is one string (a run may cross from one message into the next, as it does in
    the messages joined); a window is indexed at every `STRIDE`-th position, each once, when
    the text that completes it arrives. A product is then read at every position: any shared
    run of MATCH_CHARS or more contains an indexed window of the given text.
    """

    __slots__ = ("_grams", "_next", "_pending", "_text")

    def __init__(self) -> None:
        self._text = ""
        self._next = 0
        """The next position whose window is not indexed yet (a multiple of STRIDE)."""
        self._grams: dict[str, list[tuple[int, int]]] = {}
        self._pending: list[str] = []
        """Parts not read yet: most products are too short to be compared at all."""

    @classmethod
    def of(cls, text: str) -> GivenText:
        given = cls()
        given.extend(text)
        return given

    def extend(self, text: str) -> None:
        """Append one more thing the agent was given."""
        if text:
            self._pending.append(text)

    def runs_in(self, own: str) -> list[tuple[int, int, int]]:
        """(0, start, end) in `own` of every maximal run of at least MATCH_CHARS shared."""
        if self._pending:
            self._read_pending()
        if len(self._text) < MATCH_CHARS:
            return []
        return [(0, s, e) for _, s, e, _ in _runs_at(self._grams, [self._text], own, step=1)]

    def _read_pending(self) -> None:
        self._text += "".join(normalize(part) for part in self._pending)
        self._pending.clear()
        text, grams, pos = self._text, self._grams, self._next
        while pos + GRAM <= len(text):
            hits = grams.setdefault(text[pos : pos + GRAM], [])
            if len(hits) < MAX_HITS:  # past that the text repeats itself (see MAX_HITS)
                hits.append((0, pos))
            pos += STRIDE
        self._next = pos


def _index_windows(grams: dict[str, list[tuple[int, int]]], piece: int, text: str) -> Iterable[str]:
    """Index every window of `text`; the distinct windows."""
    seen: dict[str, int] = {}
    for i in range(len(text) - GRAM + 1):
        gram = text[i : i + GRAM]
        count = seen.get(gram, 0)
        if count < MAX_HITS:
            seen[gram] = count + 1
            grams.setdefault(gram, []).append((piece, i))
    return seen.keys()


def _runs(
    grams: dict[str, list[tuple[int, int]]], texts: list[str], query: str
) -> list[tuple[int, int, int]]:
    """(piece, start, end) of every maximal run of at least MATCH_CHARS that `query` shares."""
    return [(piece, start, end) for piece, start, end, _ in _runs_at(grams, texts, query)]


def _runs_at(
    grams: dict[str, list[tuple[int, int]]], texts: list[str], query: str, step: int = STRIDE
) -> list[tuple[int, int, int, int]]:
    """Like `_runs`, with where each run starts in its piece. `step`: read the query's windows
    at every STRIDE-th position when `grams` holds every window of the pieces, at every
    position when it holds every STRIDE-th (`GivenText`)."""
    found: list[tuple[int, int, int, int]] = []
    covered: dict[tuple[int, int], int] = {}  # (piece, diagonal) -> end of a run already found
    for i in range(0, len(query) - GRAM + 1, step):
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


def _left_over(span: Span, excused: list[Span]) -> int:
    """The longest part of `span` not covered by the excused spans that share MATCH_CHARS or
    more with it."""
    start, end = span
    cover = [(max(s, start), min(e, end)) for s, e in excused]
    cover = [(s, e) for s, e in cover if e - s >= MATCH_CHARS or (s, e) == (start, end)]
    return max((e - s for s, e in _subtract([span], _merge(cover))), default=0)


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
