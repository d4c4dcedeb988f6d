"""Diagnostics: located problems in a `.swarm` file, rendered as `file:line:col: severity: msg`.

Every failure the DSL reports is one of these; nothing else escapes to the user.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from swarmflow.core.errors import SwarmflowError

Severity = Literal["error", "warning"]


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
        lines = source.splitlines()
        if not 1 <= self.line <= len(lines):
            return self.header()
        text = lines[self.line - 1]
        return f"{self.header()}\n    {text}\n    {_caret(text, self.column, self._width(text))}"

    def _width(self, text: str) -> int:
        if self.end_line != self.line or self.end_column <= self.column:
            return 1
        return min(self.end_column, len(text) + 1) - self.column


class Spot:
    """A bare position with no syntax node: inside a token, or the start of a file."""

    def __init__(self, line: int, column: int) -> None:
        self.line = line
        self.column = column
        self.end_line = line
        self.end_column = column + 1


def _caret(text: str, column: int, width: int) -> str:
    # Keep tabs so the caret lines up however the terminal renders them.
    column = max(1, min(column, len(text) + 1))
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: column - 1])
    return pad + "^" + "~" * max(0, width - 1)


def render_all(diagnostics: Iterable[Diagnostic], source: str) -> str:
    """Every diagnostic rendered, one block after another, with a closing count."""
    chosen = list(diagnostics)
    blocks = [d.render(source) for d in chosen]
    errors = sum(1 for d in chosen if d.is_error)
    warnings = len(chosen) - errors
    if chosen:
        blocks.append(f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}")
    return "\n".join(blocks)


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

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]
