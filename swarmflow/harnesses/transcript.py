"""A harness's steps, read from the traffic through its metering endpoint.

A harness program runs its own tools: the endpoint sees each tool call in the model's answer,
and the result the program feeds back as a `tool` message in its next request. What the model
said at each step is recorded as one `harness_answered` event (its text cut to 2,000
characters, as the log keeps a message), and each call and its result as one
`harness_tool_executed` event, so a harness agent's transcript reads like a native session's
(`tool_executed`). Both are scrubbed of secrets by the event log, as every event is. A call
whose result never comes back (the program's last command, or a program that went on without
answering it) is recorded when the next request or the end of the call shows it will not,
with `fed_back` False.

The loop block of native sessions applies to these steps too: the same tool called with the
same arguments, and the same result fed back, `LOOP_BLOCK_LIMIT` times in a row (3) ends the
call with "loop block limit reached"; the endpoint answers the request that brought the
repeat with 429 and records it (`harness_refused`, kind `loop_block`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter

from pydantic import JsonValue

from swarmflow.core.messages import Message, ModelResponse, ToolCall
from swarmflow.harnesses.wire import ChatRequest
from swarmflow.record.events import HarnessAnswered, HarnessToolExecuted
from swarmflow.sessions.toolrun import LOOP_BLOCK_LIMIT, RESULT_PREVIEW

Emit = Callable[..., None]
"""Records one event with the harness session's envelope: `emit(EventClass, **fields)`."""


@dataclass
class HarnessSteps:
    """The tool calls of a harness's last answer, waiting for their results, and the loop
    count over the steps recorded so far."""

    harness: str
    """The harness's name, as its events give it."""
    _pending: list[ToolCall] = field(default_factory=list)
    _step: int = 0
    _answered: float = 0.0
    _last: tuple[str, str, str] | None = None
    _repeats: int = 0

    def seen(self, chat: ChatRequest, emit: Emit) -> str | None:
        """Record the results `chat` carries for the last answer's calls; why the harness is
        looping when one of them repeats the step before it for the limit's time, else None."""
        results = _results(chat.messages)
        loop = None
        for call in self._pending:
            result = results.get(call.id)
            self._record(emit, call, result)
            if result is not None and self._loops(call, result) and loop is None:
                loop = (
                    f"{call.name} called {LOOP_BLOCK_LIMIT} times with the same arguments "
                    "and the same result"
                )
        self._pending = []
        return loop

    def answered(self, answer: ModelResponse, step: int, emit: Emit) -> None:
        """The model answered the harness: what it said is recorded, its tool calls wait for
        their results."""
        self._pending = list(answer.tool_calls)
        self._step = step
        self._answered = perf_counter()
        if answer.text:
            emit(
                HarnessAnswered,
                harness=self.harness,
                step=step,
                text=answer.text[:RESULT_PREVIEW],
                tool_calls=[call.name for call in answer.tool_calls],
            )

    def ended(self, emit: Emit) -> None:
        """The call ended: the calls still waiting are recorded without a result."""
        for call in self._pending:
            self._record(emit, call, None)
        self._pending = []

    def _record(self, emit: Emit, call: ToolCall, result: str | None) -> None:
        emit(
            HarnessToolExecuted,
            harness=self.harness,
            tool=call.name,
            call_id=call.id,
            arguments=_arguments(call.arguments),
            result=(result or "")[:RESULT_PREVIEW],
            fed_back=result is not None,
            step=self._step,
            duration=round(perf_counter() - self._answered, 6) if result is not None else 0.0,
        )

    def _loops(self, call: ToolCall, result: str) -> bool:
        signature = (call.name, call.arguments, result)
        self._repeats = self._repeats + 1 if signature == self._last else 1
        self._last = signature
        return self._repeats >= LOOP_BLOCK_LIMIT


def _results(messages: tuple[Message, ...]) -> dict[str, str]:
    """The tool results a request carries, by the id of the call each answers (the last one
    for an id: a program sends its whole history with every request)."""
    return {
        m.tool_call_id: m.content or ""
        for m in messages
        if m.role == "tool" and m.tool_call_id is not None
    }


def _arguments(text: str) -> dict[str, JsonValue] | str:
    """The call's arguments as an object where they are one, else as sent."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


__all__ = ["HarnessSteps"]
