"""Python pieces the example `.swarm` flows import: the arbiter's verdict and a few helpers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Verdict(BaseModel):
    """The arbiter's pick among the candidates."""

    choice: int = Field(description="Index of the chosen candidate, from 0")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the arbiter is, 0 to 1")
    reason: str = ""


def has_text(value: Any) -> bool:
    """A `compact(keep: ...)` predicate: keep values whose text is not blank."""
    return bool(str(getattr(value, "text", value)).strip())


def first_line(value: Any) -> str:
    """A pipeline stage written in Python: the first line of an agent's answer."""
    text = str(getattr(value, "text", value)).strip()
    return text.splitlines()[0] if text else ""


class Review(BaseModel):
    """A reviewer's structured answer."""

    approved: bool
    score: float = Field(ge=0.0, le=1.0)
    comments: str = ""
