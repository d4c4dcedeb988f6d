"""What the metering endpoint builds around a harness's request: the model request it makes
of the program's chat request, the shape it records, and the replies it sends back."""

from __future__ import annotations

import json
from collections import Counter

from swarmflow.calls.metered import Refusal
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import ModelRequest, ModelResponse
from swarmflow.core.tokens import prompt_units
from swarmflow.harnesses.http_server import Reply, error_reply
from swarmflow.harnesses.wire import ChatRequest, chunks, completion
from swarmflow.sessions.outside import OutsideTurn

_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def model_request(turn: OutsideTurn, chat: ChatRequest) -> ModelRequest:
    """The request sent on: `max_tokens` no more than the agent's, the prompt estimated."""
    most = turn.max_output_tokens
    asked = min(chat.max_tokens, most) if chat.max_tokens is not None else most
    estimate = turn.estimator.tokens(prompt_units(chat.messages, chat.tools), turn.model_name)
    return chat.to_model(turn.caller.agent, turn.model_name, asked, estimate)


def request_shape(chat: ChatRequest) -> dict[str, object]:
    """What the request held, for its `model_called` (messages by role, tool names, ...)."""
    roles = Counter(m.role for m in chat.messages)
    return {
        "messages": dict(sorted(roles.items())),
        "tools": [t.name for t in chat.tools],
        "stream": chat.stream,
        "max_tokens": chat.max_tokens,
        "other": list(chat.extras),
    }


def refusal_of(refusal: Refusal) -> tuple[str, int, str]:
    """How a refused metered call is answered: its kind, status and reason."""
    if refusal.kind == "rail":
        return "rail", 403, refusal.detail
    if refusal.kind == "step_limit":
        return "step_limit", 429, f"step limit reached: {refusal.detail}"
    return "budget", 429, refusal.detail


def error(kind: str, status: int, reason: str) -> Reply:
    """A refusal in the OpenAI error format."""
    return error_reply(status, reason, _ERROR_TYPES.get(status, "invalid_request_error"), kind)


def models(name: str) -> Reply:
    """`GET /v1/models`: the one model this endpoint serves."""
    listed = {"id": name, "object": "model", "owned_by": "swarmflow"}
    return Reply(200, json.dumps({"object": "list", "data": [listed]}).encode())


def answered(chat: ChatRequest, answer: ModelResponse, default_name: str) -> Reply:
    """The answer, as a `chat.completion` or as server-sent events when it asked to stream."""
    call_id = f"chatcmpl-{new_session_id('h')}"
    name = chat.model or default_name
    if chat.stream:
        return Reply(200, events=list(chunks(answer, call_id, name)))
    return Reply(200, json.dumps(completion(answer, call_id, name)).encode())
