"""What `Agent(feedback=...)` declares: which language servers check the agent's edits, and
how much of what they find reaches the model (pure data; `swarmflow.feedback` acts on it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "information", "hint"]

SEVERITY_RANK: dict[str, int] = {"error": 1, "warning": 2, "information": 3, "hint": 4}
"""LSP's numbering: 1 is the most severe."""


class Feedback(BaseModel):
    """Diagnostics from language servers after each edit, posted at the next step boundary."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    servers: tuple[str, ...] = ("ruff",)
    """Language servers by name (`swarmflow.feedback.servers.KNOWN_SERVERS`); one that is not
    installed is said once and left out."""
    min_severity: Severity = "warning"
    """The least severe diagnostic posted."""
    max_items: int = Field(default=10, ge=1, le=200)
    """The most diagnostics posted after one edit."""
    max_per_file: int = Field(default=5, ge=1, le=200)
    """The most diagnostics posted for one file after one edit."""
    wait: float = Field(default=2.0, ge=0, le=60)
    """Seconds the session waits for a pass after an edit; later ones go to a later step."""
    start_timeout: float = Field(default=15.0, gt=0, le=300)
    """Seconds a server has to start and answer `initialize` before it counts as unavailable."""

    @classmethod
    def coerce(cls, value: object) -> Feedback | None:
        """`"lsp"` or True: the defaults; a mapping: those settings; None, False, "off" or
        "none": off."""
        if value is None or value is False or value in ("off", "none"):
            return None
        if value is True or value == "lsp":
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls(**value)
        raise ValueError(f"feedback={value!r}; use 'lsp', True, a mapping or Feedback(...)")
