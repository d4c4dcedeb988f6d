"""What a Team run returns: the lead's answer, why the team ended, and each role's account."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

TeamEnd = Literal[
    "submitted",
    "idle",
    "budget exhausted",
    "step limit reached",
    "wall clock",
    "lead failed",
]
"""Why a team ended.

- `submitted`: the lead called `submit`; its summary is the answer.
- `idle`: every role is idle with nothing pending (no message in flight, no undelivered
  mention); the lead's last answer is the answer.
- `budget exhausted`: the team went idle after the lead's last turn was stopped by a budget
  or its allowance.
- `step limit reached`: the same, stopped by the lead's step limit.
- `wall clock`: the team's `seconds` ran out (work in flight was cancelled), or the lead's
  last turn was stopped by the run's deadline.
- `lead failed`: the lead's session ended in error (a model error, a fault); the team stops.
"""

Listen = Literal["passive", "blocking"]
"""How a role hears board mentions: `passive` (at its next step boundary, no step spent) or
`blocking` (it calls `wait_for_mention`, one step per wait)."""


class RoleReport(BaseModel):
    """One role's account of a Team run."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, not at import

    name: str
    """The role (a declared agent)."""
    turns: int
    """Turns its session ran: the task, messages it answered, mentions it woke up to."""
    steps: int
    """Model calls its session made over the whole run."""
    tokens_in: int
    tokens_out: int
    state: str
    """Its session's end state: done, stopped or error."""
    reason: str
    """Its session's end reason (the end reasons of a session)."""
    detail: str = ""
    failed: bool = False
    """True when the role crashed (its session ended in error)."""
    listen: Listen = "passive"

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class TeamResult(BaseModel):
    """The result of `team(...)`."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, not at import

    answer: str
    """The lead's submitted summary, or its last answer."""
    reason: TeamEnd
    lead: str
    roles: dict[str, RoleReport]
    """Every role's report, in declaration order."""
    messages: int = 0
    """`message_agent` messages delivered between roles."""

    @property
    def ok(self) -> bool:
        """The team finished its work: the lead submitted or the team went idle."""
        return self.reason in ("submitted", "idle")

    @property
    def failed_roles(self) -> list[str]:
        return [name for name, role in self.roles.items() if role.failed]

    def __str__(self) -> str:
        return self.answer
