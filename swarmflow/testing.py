"""Fakes for tests and demos: a scripted model, a function model, and the real-call switch.

Real model calls are blocked while `SWARMFLOW_BLOCK_MODEL_CALLS=1` (the test suite sets it);
`allow_model_calls()` lifts the block for a scope.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from swarmflow.core.messages import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)
from swarmflow.core.tokens import estimate_prompt, estimate_tokens
from swarmflow.models.guard import BLOCK_ENV, allow_model_calls, check_real_call_allowed

__all__ = [
    "BLOCK_ENV",
    "FunctionModel",
    "ScriptedModel",
    "Step",
    "allow_model_calls",
    "check_real_call_allowed",
    "tool_call",
]

_call_ids = itertools.count(1)


def tool_call(name: str, /, **arguments: object) -> ToolCall:
    """A tool call with JSON-encoded arguments and a fresh id."""
    return ToolCall(id=f"call_{next(_call_ids)}", name=name, arguments=json.dumps(arguments))


@dataclass(frozen=True)
class Step:
    """One scripted answer: text and/or tool calls, with optional latency and usage."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    latency: float = 0.0
    usage: Usage | None = None
    error: BaseException | None = None


Reply = str | ModelResponse | Step | ToolCall | Sequence[ToolCall]


def _as_step(reply: Reply) -> Step:
    if isinstance(reply, Step):
        return reply
    if isinstance(reply, str):
        return Step(text=reply)
    if isinstance(reply, ToolCall):
        return Step(tool_calls=(reply,))
    if isinstance(reply, ModelResponse):
        return Step(text=reply.text, tool_calls=reply.tool_calls, usage=reply.usage)
    return Step(tool_calls=tuple(reply))


def _respond(request: ModelRequest, step: Step, model: str) -> ModelResponse:
    usage = step.usage or Usage(
        input=request.estimated_prompt_tokens or estimate_prompt(request.messages, request.tools),
        output=estimate_tokens(step.text)
        + sum(estimate_tokens(c.arguments) for c in step.tool_calls),
    )
    return ModelResponse(
        text=step.text,
        tool_calls=tuple(step.tool_calls),
        usage=usage,
        finish_reason="tool_calls" if step.tool_calls else "stop",
        model=model,
    )


async def _play(step: Step) -> None:
    if step.latency > 0:
        await anyio.sleep(step.latency)
    if step.error is not None:
        raise step.error


class ScriptedModel:
    """Plays a queue of steps in order, or one queue per agent when given a mapping.

    Records every request in `requests`; `assert_complete()` fails if steps are left.
    """

    is_test_model = True

    def __init__(
        self,
        steps: Sequence[Reply] | Mapping[str, Sequence[Reply]],
        *,
        name: str = "scripted",
        latency: float = 0.0,
    ) -> None:
        self.name = name
        self.latency = latency
        if isinstance(steps, Mapping):
            self._queues = {agent: [_as_step(s) for s in q] for agent, q in steps.items()}
        else:
            self._queues = {"*": [_as_step(s) for s in steps]}
        self.requests: list[ModelRequest] = []

    def _queue(self, agent: str) -> list[Step]:
        queue = self._queues.get(agent, self._queues.get("*"))
        if queue is None:
            raise AssertionError(f"ScriptedModel has no steps for agent {agent!r}")
        return queue

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        queue = self._queue(request.agent)
        if not queue:
            raise AssertionError(
                f"ScriptedModel ran out of steps at call {len(self.requests)} "
                f"(agent {request.agent!r}, prompt {request.prompt[:80]!r})"
            )
        step = queue.pop(0)
        if self.latency and not step.latency:
            step = Step(step.text, step.tool_calls, self.latency, step.usage, step.error)
        await _play(step)
        return _respond(request, step, self.name)

    @property
    def remaining(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def assert_complete(self) -> None:
        """Fail unless every scripted step was played."""
        left = {agent: len(q) for agent, q in self._queues.items() if q}
        if left:
            raise AssertionError(f"ScriptedModel has unplayed steps: {left}")


_PLAIN_REPLIES = (str, Step, ModelResponse, ToolCall, list, tuple)
"""Replies that are not awaitable: checked first, since `inspect.isawaitable` is slow."""

Policy = Callable[[ModelRequest], "Reply | Awaitable[Reply]"]


class FunctionModel:
    """Hands each request to a policy function: `fn(request)` returns a reply.

    A reply is a `str` (a final answer), a `ModelResponse`, a `Step`, or tool calls.
    """

    is_test_model = True

    def __init__(self, fn: Policy, *, name: str = "function") -> None:
        self.fn = fn
        self.name = name
        self.requests: list[ModelRequest] = []
        self.record = True

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.record:
            self.requests.append(request)
        reply = self.fn(request)
        if not isinstance(reply, _PLAIN_REPLIES) and inspect.isawaitable(reply):
            reply = await reply
        step = _as_step(reply)
        if step.latency or step.error is not None:
            await _play(step)
        return _respond(request, step, self.name)
