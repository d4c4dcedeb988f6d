"""Diagnostics: located problems in a `.swarm` file, rendered as `file:line:col: severity: msg`.

Every failure the DSL reports is one of these; nothing else escapes to the user.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from swarmflow.core.errors import SwarmflowError

Severity = Literal["error", "warning"]


class Located(Protocol):
    """Anything with a place in the source: a syntax node, a lark token or a `Spot`."""

    @property
    def line(self) -> int | None: ...

    @property
    def column(self) -> int | None: ...


class Diagnostic(BaseModel):
    """One problem at one place. Lines and columns are 1-based; `end_column` is exclusive."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Severity
    code: str
    message: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0
    file: str = "<string>"

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def header(self) -> str:
        """The first line: `file:line:col: severity: message`."""
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}"

    def render(self, source: str) -> str:
        """The header, then the source line and a caret under the place it names."""
        return render_all([self], source, count=False)

    @classmethod
    def at(
        cls, where: Located, code: str, message: str, file: str, severity: Severity = "error"
    ) -> Diagnostic:
        """A diagnostic at `where`: a syntax node, a token or a `Spot` (its end, if it has
        one, sets the caret's width)."""
        line, column = where.line or 1, where.column or 1
        return cls(
            severity=severity,
            code=code,
            message=message,
            line=line,
            column=column,
            end_line=getattr(where, "end_line", None) or line,
            end_column=getattr(where, "end_column", None) or column + 1,
            file=file,
        )

    def caret_width(self, text: str) -> int:
        if self.end_line != self.line or self.end_column <= self.column:
            return 1
        return min(self.end_column, len(text) + 1) - self.column


class Spot:
    """A bare position with no syntax node: inside a token, or the start of a file."""

    def __init__(self, line: int, column: int, width: int = 1) -> None:
        self.line = line
        self.column = column
        self.end_line = line
        self.end_column = column + width


SHOWN = 50
"""How many diagnostics are printed; the rest are counted."""
_WIDE = 120
"""Source lines longer than this are cut around the caret."""
_CONTEXT = 50


def _caret(text: str, column: int, width: int) -> str:
    # Keep tabs so the caret lines up however the terminal renders them.
    column = max(1, min(column, len(text) + 1))
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: column - 1])
    return pad + "^" + "~" * max(0, width - 1)


def _window(text: str, columns: list[int]) -> tuple[str, int]:
    """A long line cut around the carets: the text shown, and how many columns were cut."""
    if len(text) <= _WIDE:
        return text, 0
    start = max(0, min(columns) - 1 - _CONTEXT)
    end = min(len(text), max(max(columns) - 1 + _CONTEXT, start + _WIDE))
    shown = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return shown, start - (1 if start else 0)


def render_all(diagnostics: Iterable[Diagnostic], source: str, *, count: bool = True) -> str:
    """Diagnostics rendered: headers, then each source line once with a caret per problem.

    At most `SHOWN` are printed; the closing count covers them all.
    """
    chosen = list(diagnostics)
    lines = source.splitlines()
    blocks: list[str] = []
    for line, same_line in groupby(chosen[:SHOWN], key=lambda d: d.line):
        group = list(same_line)
        blocks.extend(d.header() for d in group)
        if 1 <= line <= len(lines):
            blocks.extend(_source_lines(lines[line - 1], group))
    if len(chosen) > SHOWN:
        blocks.append(f"... and {len(chosen) - SHOWN} more not shown")
    if count and chosen:
        errors = sum(1 for d in chosen if d.is_error)
        warnings = len(chosen) - errors
        blocks.append(f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}")
    return "\n".join(blocks)


def _source_lines(text: str, group: list[Diagnostic]) -> list[str]:
    shown, cut = _window(text, [d.column for d in group])
    out = [f"    {shown}"]
    for d in group:
        width = min(d.caret_width(text), len(shown) - (d.column - 1 - cut))
        out.append(f"    {_caret(shown, d.column - cut, max(1, width))}")
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def sort_key(d: Diagnostic) -> tuple[int, int, int, str]:
    """Order by place, errors before warnings at the same place."""
    return (d.line, d.column, 0 if d.is_error else 1, d.message)


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelt `name`, if one is close enough."""
    pool = sorted({c for c in candidates if c and c != name})
    found = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if found:
        return found[0]
    lowered = {c.lower(): c for c in pool}
    return lowered.get(name.lower())


class NameIndex:
    """Names indexed by their one-deletion variants, to find near misses in a large file.

    A lookup costs the square of the name's length, not the size of the file: the candidates
    are the names within two edits of it (one deletion on each side), then ranked by difflib.
    """

    SMALL = 200
    """Below this many names, a lookup scans them all, as `suggest` does."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = set(names)
        self.variants: dict[str, set[str]] = {}
        self.lowered: dict[str, set[str]] = {}
        for name in self.names:
            self.lowered.setdefault(name.lower(), set()).add(name)
            for variant in _deletions(name):
                self.variants.setdefault(variant, set()).add(name)

    def near(self, name: str) -> set[str]:
        """Names within about two edits of `name`, and those equal to it but for case."""
        found: set[str] = set(self.lowered.get(name.lower(), ()))
        for variant in _deletions(name):
            found |= self.variants.get(variant, set())
        return found

    def suggest(self, name: str, visible: Callable[[str], bool]) -> str | None:
        """The closest visible name to `name`, if one is close enough."""
        if len(self.names) < self.SMALL:
            return suggest(name, (n for n in self.names if visible(n)))
        return suggest(name, (n for n in self.near(name) if visible(n)))


def _deletions(name: str) -> set[str]:
    return {name} | {name[:i] + name[i + 1 :] for i in range(len(name))}


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'x'?` or nothing."""
    hint = suggest(name, candidates)
    return f"; did you mean '{hint}'?" if hint else ""


def listing(names: Sequence[str], limit: int = 8) -> str:
    """A short, readable list of names for a message."""
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class DslError(SwarmflowError):
    """A `.swarm` file could not be parsed, checked, compiled or evaluated.

    `diagnostics` holds every located problem; `str()` gives them rendered with the source.
    """

    def __init__(self, diagnostics: Sequence[Diagnostic], source: str = "") -> None:
        self.diagnostics = list(diagnostics)
        self.source = source
        text = (
            render_all(self.diagnostics, source)
            if source
            else "\n".join(d.header() for d in self.diagnostics)
        )
        super().__init__(text or "invalid .swarm file")
