"""The OpenAI chat-completions wire format, as the metering endpoint reads and answers it.

A request body becomes a `ModelRequest` (messages, tool schemas exactly as sent, `max_tokens`,
`tool_choice`, `temperature`); a `ModelResponse` becomes a `chat.completion` object, or the
`chat.completion.chunk` events of a streamed answer. What the harness sent that swarmflow's
request has no field for (`top_p`, `stop`, `response_format` ...) is kept in `extras`: the
request shape recorded for it, never forwarded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from swarmflow.core.reading import depth, json_value, one_line

_ROLES = frozenset({"system", "user", "assistant", "tool"})
MAX_DEPTH = 64
"""The deepest nesting of a request body (a tool's JSON schema included): far deeper than any
client sends, and shallow enough for every later step (fingerprints, records) to walk."""


class WireError(ValueError):
    """A request that is not a chat-completions request; the message names the field."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat-completions request as the harness sent it."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    model: str
    max_tokens: int | None
    stream: bool
    tool_choice: str
    temperature: float | None
    extras: tuple[str, ...]
    """The body's other keys, by name (recorded as the request's shape)."""

    def to_model(
        self, agent: str, model: str | None, max_tokens: int, estimate: int
    ) -> ModelRequest:
        return ModelRequest(
            messages=self.messages,
            tools=self.tools,
            agent=agent,
            model=model,
            max_tokens=max_tokens,
            tool_choice=self.tool_choice,
            temperature=self.temperature,
            estimated_prompt_tokens=estimate,
        )

    def shown_text(self) -> str:
        """Everything the model would read: each message's text and tool arguments."""
        parts: list[str] = []
        for m in self.messages:
            if m.content:
                parts.append(m.content)
            parts.extend(call.arguments for call in m.tool_calls)
        return "\n".join(parts)


def parse_request(body: bytes) -> ChatRequest:
    """The chat-completions request in `body`, read by the one reader (`core.reading`: its
    nesting bounded) and checked field by field; whatever is wrong with it is a `WireError`
    (answered 400), never an exception that would fail the run.

    Raises:
        WireError: naming the field that is missing or malformed.
    """
    try:
        data = json_value(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"the body is not JSON: {one_line(exc)}") from None
    if depth(data) > MAX_DEPTH:
        raise WireError(f"the body nests deeper than {MAX_DEPTH} levels")
    try:
        return _request(data)
    except (TypeError, AttributeError, ValueError, RecursionError) as exc:
        if isinstance(exc, WireError):
            raise
        raise WireError(f"malformed request: {one_line(exc)}") from None


def _request(data: object) -> ChatRequest:
    """The request of a parsed body (`WireError` naming what is wrong)."""
    if not isinstance(data, dict):
        raise WireError("the body must be a JSON object")
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise WireError("messages: a non-empty list is required")
    messages = tuple(_message(m, i) for i, m in enumerate(raw))
    tools = tuple(_tool(t, i) for i, t in enumerate(_list(data, "tools")))
    return ChatRequest(
        messages=messages,
        tools=tools,
        model=str(data.get("model") or ""),
        max_tokens=_max_tokens(data),
        stream=bool(data.get("stream", False)),
        tool_choice=_tool_choice(data.get("tool_choice", "auto")),
        temperature=_number(data.get("temperature"), "temperature"),
        extras=tuple(sorted(k for k in data if k not in _KNOWN)),
    )


_KNOWN = frozenset(
    {
        "messages",
        "tools",
        "model",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "tool_choice",
        "temperature",
    }
)


def _list(data: dict[str, object], key: str) -> list[object]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise WireError(f"{key}: a list is required")
    return value


def _message(raw: Any, index: int) -> Message:
    where = f"messages[{index}]"
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(role, str) or role not in _ROLES:
        raise WireError(f"{where}: an object with role system, user, assistant or tool")
    listed = raw.get("tool_calls") or []
    if not isinstance(listed, list):
        raise WireError(f"{where}.tool_calls: a list is required")
    calls = tuple(_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(listed))
    return Message(
        role=raw["role"],
        content=_content(raw.get("content"), where),
        tool_calls=calls,
        tool_call_id=_opt_str(raw.get("tool_call_id")),
        name=_opt_str(raw.get("name")),
    )


def _content(value: object, where: str) -> str | None:
    """Text content; a list of parts keeps its text parts (other parts are not text)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [
            p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "".join(str(t) for t in texts)
    raise WireError(f"{where}.content: text or a list of parts")


def _call(raw: Any, where: str) -> ToolCall:
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise WireError(f"{where}: an object with function.name")
    arguments = fn.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolCall(id=str(raw.get("id") or ""), name=fn["name"], arguments=arguments)


def _tool(raw: Any, index: int) -> ToolSpec:
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise WireError(f"tools[{index}]: an object with function.name")
    parameters = fn.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise WireError(f"tools[{index}].function.parameters: a JSON schema object")
    return ToolSpec(fn["name"], str(fn.get("description") or ""), parameters)


def _max_tokens(data: dict[str, object]) -> int | None:
    value = data.get("max_completion_tokens", data.get("max_tokens"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise WireError("max_tokens: a positive integer")
    return value


def _tool_choice(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        return str(value["function"].get("name", "auto"))
    raise WireError("tool_choice: a string or {'type': 'function', 'function': {'name': ...}}")


def _number(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireError(f"{field}: a number")
    return float(value)


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


# -- answers ------------------------------------------------------------------------------


def _tool_calls(response: ModelResponse) -> list[dict[str, object]]:
    return [
        {
            "id": c.id or f"call_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for i, c in enumerate(response.tool_calls)
    ]


def _usage(response: ModelResponse) -> dict[str, object]:
    u = response.usage
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.total,
        "prompt_tokens_details": {"cached_tokens": u.cached_input},
    }


def completion(response: ModelResponse, call_id: str, model: str) -> dict[str, object]:
    """The `chat.completion` object answering one request."""
    message: dict[str, object] = {"role": "assistant", "content": response.text}
    if response.tool_calls:
        message["tool_calls"] = _tool_calls(response)
    return {
        "id": call_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": response.finish_reason}],
        "usage": _usage(response),
    }


def chunks(response: ModelResponse, call_id: str, model: str) -> Iterator[bytes]:
    """The server-sent events of a streamed answer: the text, the tool calls, the finish
    with its usage, then `[DONE]` (the model's answer is whole when streaming starts)."""
    head = {
        "id": call_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    delta: dict[str, object] = {"role": "assistant", "content": response.text or ""}
    yield _event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    for index, call in enumerate(_tool_calls(response)):
        part = {"tool_calls": [{"index": index, **call}]}
        yield _event({**head, "choices": [{"index": 0, "delta": part, "finish_reason": None}]})
    end = {"index": 0, "delta": {}, "finish_reason": response.finish_reason}
    yield _event({**head, "choices": [end], "usage": _usage(response)})
    yield b"data: [DONE]\n\n"


def _event(data: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def error_body(message: str, kind: str, code: str) -> bytes:
    """An OpenAI-style error object: clients show `error.message`."""
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()
