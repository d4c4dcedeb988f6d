"""How long one attempt of a model call may take, and what to say when it takes longer.

A streamed call shows progress, so its deadline is silence: it fails when no bytes reach the
client for `timeout` seconds (the wait for the first byte included; every byte resets it, a
keep-alive comment or an empty delta as much as a token). A plain call shows nothing until its
whole answer is ready, so its `timeout` bounds the attempt as a whole. `total_timeout`, when
given, bounds every attempt as a whole in both modes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from swarmflow.core.errors import ConfigError

STREAM_TIMEOUT = 60.0
"""The default silence a streamed call tolerates, in seconds."""
PLAIN_TIMEOUT = 300.0
"""The default length of a plain attempt, in seconds: a local server may need minutes to write
a long answer, and a hosted one is rarely slower than that."""

_RAISE_TIMEOUT = "raise --timeout or OpenAIModel(timeout=...)"
_RAISE_TOTAL = "raise OpenAIModel(total_timeout=...)"


@dataclass(frozen=True, slots=True)
class AttemptTimeouts:
    """The deadlines of one attempt; `timeout` is silence when streamed, the whole otherwise."""

    stream: bool
    timeout: float
    total: float | None = None

    @classmethod
    def of(
        cls, *, stream: bool, timeout: float | None, total_timeout: float | None
    ) -> AttemptTimeouts:
        """The deadlines for the given options; `timeout=None` takes the mode's default."""
        chosen = timeout if timeout is not None else (STREAM_TIMEOUT if stream else PLAIN_TIMEOUT)
        _check_seconds("timeout", chosen)
        if total_timeout is None:
            return cls(stream, float(chosen))
        _check_seconds("total_timeout", total_timeout)
        return cls(stream, float(chosen), float(total_timeout))

    def whole(self) -> float | None:
        """The bound on the attempt as a whole; None for a stream with no total cap."""
        bounds = [self.total, None if self.stream else self.timeout]
        return min((b for b in bounds if b is not None), default=None)

    def transport(self) -> float | None:
        """The HTTP client's timeout: each connect, write and read waits at most this long.

        A read that waits `timeout` for a byte is the stream's silence deadline.
        """
        return None if math.isinf(self.timeout) else self.timeout

    def silent(self) -> str:
        """Why the attempt failed when the server sent nothing for `timeout` seconds."""
        if self.stream:
            return f"no bytes from the server for {self.timeout:g} s ({_RAISE_TIMEOUT})"
        return self._whole_by_timeout()

    def too_long(self) -> str:
        """Why the attempt failed when it outlasted `whole()`."""
        if self.total is not None and (self.stream or self.total < self.timeout):
            return f"no complete answer within total_timeout={self.total:g} s ({_RAISE_TOTAL})"
        return self._whole_by_timeout()

    def _whole_by_timeout(self) -> str:
        return (
            f"no complete answer within {self.timeout:g} s ({_RAISE_TIMEOUT}, or stream the "
            "answer: a streamed call's timeout bounds only the silence between bytes)"
        )


def _check_seconds(name: str, value: float) -> None:
    """Refuse a timeout no call could keep: zero, negative or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
