"""Who a served board's request comes from: the owner's token, or one bound to one agent.

Each serving makes one random owner token, written to `board.json` (mode 0600) for the person
who runs the run: it may act as any agent the team declares. Every declared agent also has a
token of its own, derived from the owner's with HMAC-SHA256 over the agent's name: it acts as
that agent only. An agent's token is what a harness outside the process is given
(`swarmflow board token`); holding it says nothing of the owner's token or of any other agent's.

Tokens read `sfb-<64 hex digits>-sfb`. The fixed ends are there for the run's secret redactor,
which also scrubs a secret's first or last few characters where a string is cut: ends that
are plain hex would scrub the start of the run's hex digests now and then.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

_HEAD, _TAIL = "sfb-", "-sfb"
_AGENT_SALT = b"swarmflow board agent\x00"
OWNER = None
"""`BoardKeys.bearer` for the owner's token: it acts as any agent."""


def new_owner_token() -> str:
    """A fresh random owner token (32 bytes of randomness)."""
    return f"{_HEAD}{secrets.token_hex(32)}{_TAIL}"


def agent_token(owner: str, agent: str) -> str:
    """The token bound to `agent`, derived from the serving's owner token."""
    material = _AGENT_SALT + agent.encode("utf-8", "surrogatepass")
    digest = hmac.new(owner.encode("utf-8"), material, hashlib.sha256).hexdigest()
    return f"{_HEAD}{digest}{_TAIL}"


class NotAToken(Exception):
    """The request carries no token of this serving."""


@dataclass(frozen=True, slots=True)
class BoardKeys:
    """A serving's owner token and every declared agent's own."""

    owner: str
    agents: dict[str, str]
    """Agent name -> its token."""

    @classmethod
    def made(cls, agents: Iterable[str], owner: str | None = None) -> BoardKeys:
        owner = owner or new_owner_token()
        return cls(owner, {name: agent_token(owner, name) for name in agents})

    def all(self) -> list[str]:
        """Every token of this serving (for the run's redactor)."""
        return [self.owner, *self.agents.values()]

    def bearer(self, header: str) -> str | None:
        """Whom an `Authorization` header speaks for: an agent's name, or `OWNER` (None).

        Every token is compared in constant time, so the answer's timing says nothing of
        which one came closest.

        Raises:
            NotAToken: no token of this serving.
        """
        given = header.encode("utf-8", "surrogateescape")
        found: list[str | None] = []
        if hmac.compare_digest(given, f"Bearer {self.owner}".encode()):
            found.append(OWNER)
        for name, token in self.agents.items():
            if hmac.compare_digest(given, f"Bearer {token}".encode()):
                found.append(name)
        if not found:
            raise NotAToken
        return found[0]
