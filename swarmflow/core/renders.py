"""What the flow's own code rendered of agents' texts, so that a string built from them keeps
their origin whatever their length.

An f-string, `str.format`, `%` or `str()` of a `SourcedStr` builds a plain `str`: Python gives
the new string no way to carry an attribute. What it does give is a hook on the way in: the
piece being rendered passes through `SourcedStr.__format__` / `__str__` / `__repr__`. The run's
`RenderLog` keeps each piece with the agents it came from; a text about to reach an agent is
then searched for every piece rendered so far in the run (`sources_in`).

A piece of at least `MATCH_CHARS` letters and digits matches wherever it occurs, in the
normal form the fingerprints use (so a change of case or spacing after the render does not
hide it). A shorter piece ("Paris", "42") matches only as it was rendered and as a whole word:
inside another word it is a different word. The rule errs toward refusing: a short answer the
flow rendered, and that also occurs as a word in a text meant for an agent without the edge, is
refused there.
"""

from __future__ import annotations

from contextvars import ContextVar

from swarmflow.core.fingerprint import MATCH_CHARS, normalize


class RenderLog:
    """The pieces of agents' texts rendered during one run, with their sources."""

    __slots__ = ("_long", "_short")

    def __init__(self) -> None:
        self._long: dict[str, frozenset[str]] = {}
        """Normalised pieces of MATCH_CHARS or more, matched anywhere in normalised text."""
        self._short: dict[str, frozenset[str]] = {}
        """Pieces as rendered, matched as whole words."""

    def __len__(self) -> int:
        return len(self._long) + len(self._short)

    def add(self, piece: str, sources: frozenset[str]) -> None:
        """Remember that `piece`, from `sources`, went into a string the flow built."""
        if not sources:
            return
        normal = normalize(piece)
        if not normal:  # nothing a receiver could read (blank, or punctuation only)
            return
        if len(normal) >= MATCH_CHARS:
            key, table = normal, self._long
        else:
            key, table = str.strip(piece), self._short
        known = table.get(key)
        if known is None or not sources <= known:
            table[key] = sources if known is None else known | sources

    def sources_in(self, text: str) -> frozenset[str]:
        """The sources of every rendered piece that `text` contains."""
        found: set[str] = set()
        if self._long:
            normal = normalize(text)
            for piece, sources in self._long.items():
                if piece in normal:
                    found.update(sources)
        for piece, sources in self._short.items():
            if _contains_word(text, piece):
                found.update(sources)
        return frozenset(found)


def _contains_word(text: str, piece: str) -> bool:
    """Whether `piece` occurs in `text` not glued to a letter or digit on either side."""
    start = text.find(piece)
    while start >= 0:
        end = start + len(piece)
        glued_before = start > 0 and piece[0].isalnum() and text[start - 1].isalnum()
        glued_after = end < len(text) and piece[-1].isalnum() and text[end].isalnum()
        if not (glued_before or glued_after):
            return True
        start = text.find(piece, start + 1)
    return False


current_renders: ContextVar[RenderLog | None] = ContextVar("swarmflow_renders", default=None)
"""The running flow's log; set with the current run, so every task of the run shares it."""


def note_render(piece: str, sources: frozenset[str]) -> None:
    """Record a render in the running flow's log (outside a run there is nothing to guard)."""
    log = current_renders.get()
    if log is not None:
        log.add(piece, sources)
