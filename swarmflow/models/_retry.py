"""Error classification and backoff for the OpenAI-compatible adapter.

The SDK is imported lazily here too: this module is only loaded when a call fails.
"""

from __future__ import annotations

import math
import random
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmflow.core.errors import (
    ContextLengthExceeded,
    ModelAuthError,
    ModelError,
    ModelNotFound,
    ModelResponseError,
    ModelUnavailable,
)
from swarmflow.core.secrets import Redactor, secret_values

if TYPE_CHECKING:
    import openai

BACKOFF_CAP = 20.0
RETRY_AFTER_CAP = 60.0
_CONTEXT_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "too many tokens",
    "exceeds the context",
    "context window",
    "context size",  # llama.cpp: "the request exceeds the available context size"
    "prompt is too long",
)
_RETRY_STATUS = frozenset({408, 409, 425, 429})


class Retryable(Exception):
    """A failure worth another attempt: rate limit, server error, timeout, lost connection."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Who is being called; it knows the key only to scrub it from messages."""

    model: str
    base_url: str
    api_key: str = field(repr=False)

    def scrub(self, text: str) -> str:
        """The text with the API key and the environment's secrets masked (the one policy,
        `core.secrets`), in case a server echoed one back."""
        return Redactor(secret_values(extra=[self.api_key])).scrub(text)


def backoff_delay(attempt: int, base: float, retry_after: float | None) -> float:
    """Seconds to wait before the next attempt: Retry-After when given, else jittered backoff."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), RETRY_AFTER_CAP)
    ceiling = min(BACKOFF_CAP, base * 2.0 ** (attempt - 1))
    # "Equal jitter": keeps a floor so retries never hammer, spreads concurrent clients apart.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait, from retry-after-ms or Retry-After (seconds or a date)."""
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000  # malformed (not a finite number): fall back to Retry-After
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    if _number(value, finite=False) is not None:
        return None  # "nan", "inf": a number, but no wait anyone can keep
    from email.utils import parsedate_to_datetime  # rarely needed; keeps import time down

    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def _number(text: str | None, *, finite: bool = True) -> float | None:
    """`text` as a number (a finite one unless `finite=False`), else None."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) or not finite else None


def server_message(body: object, fallback: str) -> tuple[str, str]:
    """The server's error message and code, from an OpenAI-style error body."""
    if isinstance(body, Mapping):
        message = body.get("message") or body.get("detail") or fallback
        return str(message)[:500], str(body.get("code") or body.get("type") or "")
    if isinstance(body, str) and body.strip():
        return body.strip()[:500], ""
    return fallback, ""


def classify(exc: Exception, endpoint: Endpoint) -> ModelError | Retryable:
    """Turn an SDK exception into a swarmflow error or a Retryable."""
    import openai

    # A timeout (an APIConnectionError too) never comes here: the adapter words it, since
    # only it knows which deadline ran out and which option raises it (`_timeouts`).
    if isinstance(exc, openai.APIConnectionError):
        unresolved = _name_error(exc)
        if unresolved is not None:
            return ModelUnavailable(
                f"the host of the base URL {endpoint.base_url} does not resolve ({unresolved}); "
                "check OPENAI_BASE_URL or the base_url argument (not retried)"
            )
        cause = exc.__cause__ or exc.__context__
        return Retryable(f"connection error: {cause or exc.message}")
    if isinstance(exc, openai.APIStatusError):
        return _classify_status(exc, endpoint)
    if isinstance(exc, openai.APIError):
        return _classify_stream_error(exc, endpoint)
    return ModelResponseError(f"unexpected error from the endpoint at {endpoint.base_url}: {exc}")


def _name_error(exc: BaseException) -> socket.gaierror | None:
    """The failed name lookup behind a connection error, if that is what it was.

    No retry makes an unknown host resolve, so this fails at once instead of backing off.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, socket.gaierror):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _classify_status(exc: openai.APIStatusError, endpoint: Endpoint) -> ModelError | Retryable:
    """Classify an HTTP error status."""
    status: int = exc.status_code
    message, code = server_message(exc.body, exc.message)
    message = endpoint.scrub(message)
    known = _known_error(status, message, code, endpoint)
    if known is not None:
        return known
    if status in _RETRY_STATUS or status >= 500:
        if code == "insufficient_quota":
            return ModelUnavailable(f"{_at(endpoint)} has no quota left (not retried): {message}")
        return Retryable(f"HTTP {status}: {message}", retry_after_seconds(exc.response.headers))
    return ModelResponseError(f"{_at(endpoint)} answered HTTP {status}: {message}")


def _known_error(status: int, message: str, code: str, endpoint: Endpoint) -> ModelError | None:
    """Auth, unknown-model and context-length errors, which no retry can fix."""
    if status in (401, 403):
        return ModelAuthError(
            f"the endpoint at {endpoint.base_url} rejected the API key (HTTP {status}); "
            f"check OPENAI_API_KEY or the api_key argument: {message}"
        )
    if status == 404 or code == "model_not_found":
        return ModelNotFound(
            f"the endpoint at {endpoint.base_url} does not serve model {endpoint.model!r} "
            f"(HTTP {status}): {message}"
        )
    lowered = f"{code} {message}".lower()
    if status in (400, 413, 422) and any(word in lowered for word in _CONTEXT_WORDS):
        return ContextLengthExceeded(f"{_at(endpoint)}: the request is too long: {message}")
    return None


def _classify_stream_error(exc: openai.APIError, endpoint: Endpoint) -> ModelError | Retryable:
    """Classify an error event that arrived inside a stream."""
    message, code = server_message(exc.body, exc.message)
    message = endpoint.scrub(message)
    known = _known_error(400, message, code, endpoint)
    return known if known is not None else Retryable(f"error in stream: {message}")


def _at(endpoint: Endpoint) -> str:
    """Names the model and endpoint for messages."""
    return f"model {endpoint.model!r} at {endpoint.base_url}"
