"""The one secret policy: which environment variables are secret, and how text is scrubbed.

Every surface goes through it: the event log and its sinks, the live progress, the CLI's
printed output, error messages of the model adapter, and the shell environment handed to an
agent's commands (secret variables are left out of it).

- A variable is secret when its name matches `SECRET_NAME`, or when its value is a URL that
  carries a password (`scheme://user:password@host`; the password is the secret).
- A secret value of at least `MIN_SECRET` characters is replaced by `REDACTED` wherever it
  appears, raw or as JSON escapes it.
- A preview cut at a length can end in the first part of a secret, or start with its last part.
  `preview` scrubs before it cuts; `Redactor` also catches such a part of `MIN_PART` characters
  or more at a cut edge (the end or start of a string, a closing quote, an ellipsis), so text
  cut elsewhere is scrubbed too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW(?:OR)?D|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.IGNORECASE
)
"""Environment variable names whose values are secret (API_KEY, GH_TOKEN, X_AUTH, ...)."""
MIN_SECRET = 8
"""Shorter values (`1`, `true`, `en_US`) would scrub ordinary words everywhere."""
MIN_PART = 4
"""The shortest part of a secret recognised at a cut edge."""
REDACTED = "[redacted]"
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@")
_EDGE = r"""(?=["'…]|\.\.\.|\Z)"""
_EDGE_REVERSED = _EDGE  # "…" and "..." read the same reversed


def is_secret(name: str, value: str) -> bool:
    """Whether the environment variable `name=value` is secret (and stays out of shells)."""
    return bool(SECRET_NAME.search(name) or _URL_PASSWORD.search(value))


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The secret values of `env` (default: this process's environment), plus `extra`."""
    source = os.environ if env is None else env
    values = list(extra)
    for name, value in source.items():
        if SECRET_NAME.search(name):
            values.append(value)
        values.extend(_URL_PASSWORD.findall(value))
    return sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)


def public_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) without its secret variables."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not is_secret(k, v)}


class Redactor:
    """Replaces secret values, and parts of them at cut edges, in text and in bytes.

    Two passes, each an alternation of literals that the regex engine skips through quickly:
    the text forwards (whole secrets, and first parts before a cut edge), then the text
    reversed (last parts after a cut edge are first parts of the reversed secret).
    """

    __slots__ = ("_back", "_back_bytes", "_fwd", "_fwd_bytes", "_hints", "_hints_text", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._compile(secrets)

    def add(self, secret: str) -> None:
        """Scrub `secret` too from now on (a secret made during the run: a board's token).
        Every holder of this redactor (the event log, the journal) sees it at once."""
        if len(secret) >= MIN_SECRET and secret not in self.secrets:
            self._compile([*self.secrets, secret])

    def _compile(self, secrets: Iterable[str]) -> None:
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len))[::-1]
        forward, backward = _patterns(self.secrets)
        self._fwd = re.compile(forward) if forward else None
        self._back = re.compile(backward) if backward else None
        self._fwd_bytes = re.compile(forward.encode()) if forward else None
        self._back_bytes = re.compile(backward.encode()) if backward else None
        # Every match starts with a secret's first MIN_PART characters or ends with its last:
        # looking for those plain words skips both passes for almost every event. Each is a
        # substring test (`in`, in C): a regex alternation of them reads a 400-byte event
        # line in about 35,000 instructions, the tests for one secret's words in about 10,000.
        ends = sorted(
            {e for s in self.secrets for e in (s[:MIN_PART], s[-MIN_PART:], _escaped(s)[:MIN_PART])}
        )
        self._hints_text = tuple(ends)
        self._hints = tuple(e.encode() for e in ends)

    def __bool__(self) -> bool:
        return self._fwd is not None

    def scrub(self, text: str) -> str:
        """`text` with every secret, and every part of one at a cut edge, replaced."""
        if self._fwd is None or self._back is None or not text:
            return text
        for hint in self._hints_text:
            if hint in text:
                break
        else:
            return text
        text = self._fwd.sub(REDACTED, text)
        reverse = text[::-1]
        if self._back.search(reverse):
            text = self._back.sub(REDACTED[::-1], reverse)[::-1]
        return text

    def scrub_bytes(self, data: bytes) -> bytes:
        """`scrub` for UTF-8 bytes (a serialised event line)."""
        if self._fwd_bytes is None or self._back_bytes is None:
            return data
        for hint in self._hints:
            if hint in data:
                break
        else:
            return data
        if self._fwd_bytes.search(data):
            data = self._fwd_bytes.sub(REDACTED.encode(), data)
        reverse = data[::-1]
        if self._back_bytes.search(reverse):
            data = self._back_bytes.sub(REDACTED[::-1].encode(), reverse)[::-1]
        return data

    def preview(self, text: str, limit: int) -> str:
        """At most about `limit` characters of `text`, scrubbed before the cut."""
        return preview(self.scrub(text), limit)


def scrubbed(text: str) -> str:
    """`text` with this process's secrets scrubbed: for what the CLI prints."""
    return environment_redactor().scrub(text)


def scrubbing(redactor: Redactor) -> Callable[[object, str, dict[str, object]], dict[str, object]]:
    """A structlog processor that scrubs every string value of the event dict."""

    def scrub(_logger: object, _method: str, event: dict[str, object]) -> dict[str, object]:
        return {k: redactor.scrub(v) if isinstance(v, str) else v for k, v in event.items()}

    return scrub


def preview(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, with secrets of this process's environment
    scrubbed before the cut (the event log scrubs the run's own secrets again)."""
    return environment_redactor().scrub(text)[:limit]


@lru_cache(maxsize=4)
def _environment_redactor(key: frozenset[tuple[str, str]]) -> Redactor:
    return Redactor(secret_values(dict(key)))


def environment_redactor() -> Redactor:
    """A redactor for the secrets of this process's current environment."""
    return _environment_redactor(frozenset(os.environ.items()))


def _patterns(secrets: tuple[str, ...]) -> tuple[str, str]:
    """The forward alternation (each secret whole, raw and JSON-escaped; each first part at a
    cut edge) and the backward one (each last part, reversed, at a cut edge)."""
    whole: set[str] = set()
    for secret in secrets:
        whole.update((secret, _escaped(secret)))
    forward = [re.escape(form) for form in sorted(whole, key=len, reverse=True)]
    forward.extend(_prefix(secret) + _EDGE for secret in secrets)
    backward = [_prefix(secret[::-1]) + _EDGE_REVERSED for secret in secrets]
    return "|".join(forward), "|".join(backward)


def _escaped(secret: str) -> str:
    """`secret` as it appears inside a JSON string."""
    return json.dumps(secret)[1:-1]


def _prefix(secret: str) -> str:
    """Any first part of `secret` of at least MIN_PART characters but not all of it, longest
    first."""
    tail = ""
    for ch in reversed(secret[MIN_PART:-1]):
        tail = f"(?:{re.escape(ch)}{tail})?"
    return re.escape(secret[:MIN_PART]) + tail
