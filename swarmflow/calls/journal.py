"""The journal of model calls: each call's key, its start and its settled answer.

A model call's key is its branch, its agent, its purpose and a digest of what it sent (the
messages, the tools, the output form, the model's name; not `max_tokens`, which depends on
the budget left). A resumed run whose call sends what an earlier process's settled call sent
is answered from that record at 0 tokens; it pays from the first call that sends something
else (a tool that answered differently, a call the earlier process never finished).
"""

from __future__ import annotations

from collections.abc import Iterator

from swarmflow.core.messages import ModelRequest, ModelResponse, ToolCall
from swarmflow.record.journal import Journal, ModelKeyTuple, digest_of
from swarmflow.record.records import ModelCallFinished, ModelCallStarted, usage_fields


def model_key(branch: str, agent: str, purpose: str, request: ModelRequest) -> ModelKeyTuple:
    """The key of a model call sending `request`."""
    return (branch, agent, purpose, digest_of(*_sent(request)))


def _sent(request: ModelRequest) -> Iterator[str]:
    """What the model reads of `request`, as text, part by part."""
    yield request.model or ""
    yield request.tool_choice
    yield repr(request.output)
    for spec in request.tools:
        yield repr(spec)
    for m in request.messages:
        yield f"{m.role}\x01{m.content or ''}\x01{m.tool_call_id or ''}\x01{m.name or ''}"
        for call in m.tool_calls:
            yield f"{call.id}\x01{call.name}\x01{call.arguments}"


def _key_fields(key: ModelKeyTuple) -> dict[str, str]:
    branch, agent, purpose, digest = key
    return {"branch": branch, "agent": agent, "purpose": purpose, "digest": digest}


def note_started(journal: Journal, key: ModelKeyTuple) -> None:
    """Journal that the call is about to be sent (written at the barrier before it)."""
    journal.write(ModelCallStarted, {"key": _key_fields(key)})


def note_finished(
    journal: Journal, key: ModelKeyTuple, response: ModelResponse, cost: float
) -> None:
    """Journal the settled answer, for a resumed run to replay."""
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls]
    fields = {
        "key": _key_fields(key),
        "text": response.text,
        "tool_calls": calls,
        "usage": usage_fields(response.usage),
        "cost": cost,
        "finish_reason": response.finish_reason,
        "model": response.model,
        "output_mode": response.output_mode,
    }
    journal.write(ModelCallFinished, fields)


def recorded_response(record: ModelCallFinished) -> ModelResponse:
    """The recorded answer, as the model gave it."""
    return ModelResponse(
        text=record.text,
        tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in record.tool_calls),
        usage=record.usage,
        finish_reason=record.finish_reason,
        model=record.model,
        output_mode=record.output_mode,
    )
