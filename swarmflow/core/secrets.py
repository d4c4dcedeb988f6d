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
from collections.abc import Iterable, Mapping
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
_END = r"""(?=["'…]|\.\.\.|\Z)"""
_START = r"""(?:(?<=["'…])|\A)"""


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
    """Replaces secret values, and parts of them at cut edges, in text and in bytes."""

    __slots__ = ("_bytes", "_text", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len))[::-1]
        pattern = _pattern(self.secrets)
        self._text = re.compile(pattern) if pattern else None
        self._bytes = re.compile(pattern.encode()) if pattern else None

    def __bool__(self) -> bool:
        return self._text is not None

    def scrub(self, text: str) -> str:
        """`text` with every secret, and every part of one at a cut edge, replaced."""
        if self._text is None or not text:
            return text
        return self._text.sub(REDACTED, text)

    def scrub_bytes(self, data: bytes) -> bytes:
        """`scrub` for UTF-8 bytes (a serialised event line)."""
        if self._bytes is None or not self._bytes.search(data):
            return data
        return self._bytes.sub(REDACTED.encode(), data)

    def preview(self, text: str, limit: int) -> str:
        """At most about `limit` characters of `text`, scrubbed before the cut."""
        return preview(self.scrub(text), limit)


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


def _pattern(secrets: tuple[str, ...]) -> str:
    """One alternation: each secret whole (raw and JSON-escaped), then its cut parts."""
    whole: set[str] = set()
    for secret in secrets:
        whole.update((secret, json.dumps(secret)[1:-1]))
    alternatives = [re.escape(form) for form in sorted(whole, key=len, reverse=True)]
    for secret in secrets:
        alternatives.append(_prefix(secret) + _END)
        alternatives.append(_START + _suffix(secret))
    return "|".join(alternatives)


def _prefix(secret: str) -> str:
    """Any first part of `secret` of at least MIN_PART characters, longest first."""
    tail = ""
    for ch in reversed(secret[MIN_PART:-1]):
        tail = f"(?:{re.escape(ch)}{tail})?"
    return re.escape(secret[:MIN_PART]) + tail


def _suffix(secret: str) -> str:
    """Any last part of `secret` of at least MIN_PART characters, longest first."""
    head = ""
    for ch in secret[1:-MIN_PART]:
        head = f"(?:{head}{re.escape(ch)})?"
    return head + re.escape(secret[-MIN_PART:])
