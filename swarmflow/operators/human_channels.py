"""Human channels: console, scripted and deferred.

A channel returns `(answer, answered_by)`. Timeouts are enforced by the `human()` operator;
channels only raise `TimeoutError` when they know nobody will answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from swarmflow.core.errors import HumanError, RunPaused


class ScriptedHuman:
    """Answers given up front, for tests and CI.

    `answers` is a list (used in order), a mapping from question or token to answer, or a
    function of `(question, payload)`.
    """

    name = "scripted"

    def __init__(
        self,
        answers: Iterable[Any] | Mapping[str, Any] | Callable[[str, Any], Any],
        *,
        who: str = "scripted",
    ) -> None:
        self._fn = answers if callable(answers) else None
        self._map = dict(answers) if isinstance(answers, Mapping) else None
        self._queue = list(answers) if self._fn is None and self._map is None else []  # type: ignore[arg-type]
        self.who = who
        self.asked: list[tuple[str, object]] = []

    async def ask(
        self, question: str, payload: object, *, token: str, timeout: float | None
    ) -> tuple[object, str]:
        self.asked.append((question, payload))
        if self._fn is not None:
            return self._fn(question, payload), self.who
        if self._map is not None:
            for key in (token, question):
                if key in self._map:
                    return self._map[key], self.who
            raise HumanError(f"no scripted answer for question {question!r} (token {token})")
        if not self._queue:
            raise HumanError(f"scripted human ran out of answers at question {question!r}")
        return self._queue.pop(0), self.who


class ConsoleHuman:
    """Asks on the terminal and reads one line from standard input."""

    name = "console"

    def __init__(self, who: str = "console") -> None:
        self.who = who

    async def ask(
        self, question: str, payload: object, *, token: str, timeout: float | None
    ) -> tuple[object, str]:
        shown = "" if payload is None else f"\n{_show(payload)}"
        prompt = f"\n[swarmflow] {question}{shown}\n> "
        line = await anyio.to_thread.run_sync(_read_line, prompt, abandon_on_cancel=True)
        if line is None:
            raise HumanError("standard input closed before an answer was given")
        return line.strip(), self.who


def _read_line(prompt: str) -> str | None:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    return line if line else None


def _show(payload: object) -> str:
    dump = getattr(payload, "model_dump_json", None)
    if dump is not None:
        return str(dump(indent=2))
    try:
        return json.dumps(payload, indent=2, default=str)
    except TypeError:
        return repr(payload)


class DeferredHuman:
    """Stops the run at a question; resume by running again with the answers by token."""

    name = "deferred"

    def __init__(self, answers: Mapping[str, Any] | None = None, *, who: str = "deferred") -> None:
        self.answers = dict(answers or {})
        self.who = who

    async def ask(
        self, question: str, payload: object, *, token: str, timeout: float | None
    ) -> tuple[object, str]:
        if token in self.answers:
            return self.answers[token], self.who
        raise RunPaused(
            f"run paused for a human answer to {question!r}; "
            f"resume with DeferredHuman({{{token!r}: answer}})",
            token=token,
            question=question,
        )


class NoHuman:
    """The channel used when none was given and standard input is not a terminal."""

    name = "none"

    async def ask(
        self, question: str, payload: object, *, token: str, timeout: float | None
    ) -> tuple[object, str]:
        raise HumanError(
            f"the flow asked a human {question!r} but the run has no human channel; pass "
            "human=ScriptedHuman([...]), human=DeferredHuman() or run on a terminal"
        )
