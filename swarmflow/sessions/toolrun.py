"""Running one response's tool calls: gating, arguments, rails, execution, loop detection.

The runner reports what happened as a `ToolRound` (the observations, an accepted submission,
a loop it detected); the session decides what follows. A tool error is an observation for the
model, never a crash of the run. Arguments are parsed and tools invoked through
`swarmflow.core.toolcalls`, the one path every tool call takes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from swarmflow.core.errors import ToolError
from swarmflow.core.messages import Message, ToolCall
from swarmflow.core.ports import EditWatch, Emit, ToolContext, ToolResult, ToolSource
from swarmflow.core.toolcalls import invoke, parse_args, validate_args
from swarmflow.record.events import ToolExecuted, ToolRefused
from swarmflow.runtime.rails import Hook, Verdict

LOOP_BLOCK_LIMIT = 3
"""Identical calls with identical results in a row that count as a loop."""
RESULT_PREVIEW = 2000
"""Characters of a tool result kept in its `tool_executed` event."""

RailGate = Callable[[Hook, Any], Awaitable[Verdict]]
"""Runs a hook's rails for the session (and records a veto)."""


@dataclass(frozen=True, slots=True)
class ToolRound:
    """What running one response's tool calls produced."""

    observations: tuple[Message, ...]
    """One tool message per call that ran or was refused, in call order."""
    submitted: str | None = None
    """The text of an accepted `submit`; later calls in the response were not run."""
    loop: str | None = None
    """Why the agent is looping, when it repeated one call with one result too often."""
    refused: tuple[str, ...] = ()
    """The reasons of the calls that were refused."""


@dataclass(slots=True)
class _Outcome:
    result: ToolResult
    refusal: str | None = None


class ToolRunner:
    """Executes the tool calls of one session."""

    # Slots: every session has one, and a fan-out holds thousands of sessions at once.
    __slots__ = (
        "_last",
        "_repeats",
        "allowed",
        "context",
        "emit",
        "rails",
        "tools",
        "watch",
        "write_ahead",
    )

    def __init__(
        self,
        tools: ToolSource,
        allowed: Iterable[str],
        *,
        context: ToolContext,
        emit: Emit,
        rails: RailGate | None = None,
        write_ahead: Callable[[], None] | None = None,
        watch: EditWatch | None = None,
    ) -> None:
        """`write_ahead`: the run's write barrier, called before each tool runs; `watch`:
        told before and after each call, to check the files it changed (`swarmflow.feedback`)."""
        self.tools = tools
        self.allowed = allowed if isinstance(allowed, frozenset) else frozenset(allowed)
        self.context = context
        self.emit = emit
        self.rails = rails
        self.write_ahead = write_ahead
        self.watch = watch
        self._last: tuple[str, str, str] | None = None
        """The last call and its result; `_repeats`: how many times in a row it came."""
        self._repeats = 0

    async def run_all(self, calls: Sequence[ToolCall]) -> ToolRound:
        """Run calls in order; stop at an accepted `submit` or when the agent loops."""
        observations: list[Message] = []
        refused: list[str] = []
        for call in calls:
            outcome = await self._run_one(call)
            result = outcome.result
            observations.append(Message("tool", result.text, tool_call_id=call.id, name=call.name))
            if outcome.refusal is not None:
                refused.append(outcome.refusal)
            if result.submitted:
                return ToolRound(
                    tuple(observations), _submission_text(result), None, tuple(refused)
                )
            if self._loops(call, result):
                loop = (
                    f"{call.name} called {LOOP_BLOCK_LIMIT} times with the same arguments "
                    "and the same result"
                )
                return ToolRound(tuple(observations), None, loop, tuple(refused))
        return ToolRound(tuple(observations), refused=tuple(refused))

    def _loops(self, call: ToolCall, result: ToolResult) -> bool:
        """Whether this call, with its result, repeats the previous one for the limit's time."""
        signature = (call.name, call.arguments, result.text)
        self._repeats = self._repeats + 1 if signature == self._last else 1
        self._last = signature
        return self._repeats >= LOOP_BLOCK_LIMIT

    async def _run_one(self, call: ToolCall) -> _Outcome:
        """One call: gate, parse, before-rails, run, after-rails, record."""
        refusal = self._gate(call)
        if refusal is not None:
            return self._refuse(call, refusal, "Use only your own tools.")
        tool = self.tools.get(call.name)
        try:
            args = parse_args(tool, call.arguments)
            verdict = await self._before(args)
            if verdict.veto is not None:
                reason = f"rail {verdict.rail!r} vetoed the call: {verdict.veto.reason}"
                return self._refuse(call, reason)
            args = validate_args(tool, verdict.payload)
        except ToolError as exc:
            return _Outcome(self._record(call, call.arguments, ToolResult(exc.message, ok=False)))
        if self.write_ahead is not None:
            self.write_ahead()
        if self.watch is not None:
            await self.watch.before_tool(call.name, args)
        started = time.perf_counter()
        result = await invoke(tool, args, self.context)
        duration = time.perf_counter() - started
        if self.watch is not None:  # its findings wait in the inbox for the next step
            await self.watch.after_tool(call.name, args, result.ok)
        result = await self._after(call, result)
        return _Outcome(self._record(call, args, result, duration))

    def _gate(self, call: ToolCall) -> str | None:
        if call.name not in self.allowed:
            have = ", ".join(sorted(self.allowed)) or "none"
            return f"tool {call.name!r} is not among {self.context.agent}'s tools ({have})"
        if call.name not in self.tools:
            return f"tool {call.name!r} is declared but no such tool is registered"
        return None

    async def _before(self, args: BaseModel) -> Verdict:
        if self.rails is None:
            return Verdict(args)
        return await self.rails(Hook.BEFORE_TOOL_CALL, args)

    async def _after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        if self.rails is None:
            return result
        verdict = await self.rails(Hook.AFTER_TOOL_CALL, result)
        if verdict.veto is None:
            amended: ToolResult = verdict.payload
            return amended
        return ToolResult(
            f"the result of {call.name} was withheld by rail {verdict.rail!r}: "
            f"{verdict.veto.reason}",
            ok=False,
        )

    def _refuse(self, call: ToolCall, reason: str, advice: str = "") -> _Outcome:
        self.emit(ToolRefused, tool=call.name, call_id=call.id, reason=reason)
        text = f"refused: {reason}." + (f" {advice}" if advice else "")
        return _Outcome(ToolResult(text, ok=False), reason)

    def _record(
        self, call: ToolCall, args: Any, result: ToolResult, duration: float = 0.0
    ) -> ToolResult:
        shown = args.model_dump(mode="json") if isinstance(args, BaseModel) else args
        self.emit(
            ToolExecuted,
            tool=call.name,
            call_id=call.id,
            arguments=shown,
            ok=result.ok,
            result=result.text[:RESULT_PREVIEW],
            duration=duration,
        )
        return result


def _submission_text(result: ToolResult) -> str:
    return result.value if isinstance(result.value, str) else result.text


def unanswered(history: Sequence[Message], why: str) -> list[Message]:
    """A "not run" observation for each tool call of the last model response in `history`
    that has none (its turn ended before it ran): servers refuse a conversation that holds
    an unanswered call, so the session's next turn would fail without them."""
    index = len(history) - 1
    while index >= 0 and history[index].role == "tool":
        index -= 1
    if index < 0 or not history[index].tool_calls:
        return []
    answered = {m.tool_call_id for m in history[index + 1 :]}
    return [
        Message("tool", f"not run: {why}", tool_call_id=call.id, name=call.name)
        for call in history[index].tool_calls
        if call.id not in answered
    ]
