"""Conversion between swarmflow messages and the chat-completions wire format."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from swarmflow.core.errors import ModelResponseError
from swarmflow.core.messages import (
    FinishReason,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from swarmflow.core.tokens import estimate_prompt, estimate_tokens

_FINISH: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
_TOOL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def message_to_wire(message: Message) -> dict[str, object]:
    """One swarmflow message as a chat-completions message dict."""
    wire: dict[str, object] = {"role": message.role, "content": message.content}
    if message.role == "assistant":
        # llama.cpp answers HTTP 500 to an assistant turn whose content is null, and OpenAI
        # accepts "", so never send null here.
        wire["content"] = message.content or ""
        if message.tool_calls:
            wire["tool_calls"] = [_call_to_wire(call) for call in message.tool_calls]
    elif message.role == "tool":
        wire["content"] = message.content or ""
        wire["tool_call_id"] = message.tool_call_id or ""
    else:
        wire["content"] = message.content or ""
    if message.name and message.role in ("user", "system", "assistant"):
        wire["name"] = message.name
    return wire


def _call_to_wire(call: ToolCall) -> dict[str, object]:
    """A tool call as the assistant message carries it."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments or "{}"},
    }


def tool_to_wire(spec: ToolSpec) -> dict[str, object]:
    """A tool spec in the function-tool wire shape."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters or {"type": "object", "properties": {}},
        },
    }


def build_payload(request: ModelRequest, *, model: str, token_param: str) -> dict[str, object]:
    """The JSON body for one chat-completions call, before tool choice, output and streaming."""
    payload: dict[str, object] = {
        "model": request.model or model,
        "messages": [message_to_wire(m) for m in request.messages],
        token_param: request.max_tokens,
    }
    if request.temperature is not None:
        payload["temperature"] = request.temperature
    if request.tools:
        payload["tools"] = [tool_to_wire(t) for t in request.tools]
    return payload


def finish_reason(value: object, *, has_calls: bool) -> FinishReason:
    """Map a wire finish_reason onto the swarmflow literal; unknown values become "stop"."""
    mapped = _FINISH.get(value, "stop") if isinstance(value, str) else "stop"
    # Several local servers report "stop" even when the turn ends in tool calls.
    return "tool_calls" if has_calls and mapped == "stop" else mapped


def usage_from_wire(raw: object) -> Usage | None:
    """Usage from a wire usage object, or None when the server sent none."""
    if not isinstance(raw, Mapping):
        return None
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    return Usage(
        input=_int(raw.get("prompt_tokens")),
        output=_int(raw.get("completion_tokens")),
        cached_input=_int(cached),
    )


def _int(value: object) -> int:
    """A token count, tolerating null and floats."""
    return int(value) if isinstance(value, int | float) else 0


def estimate_usage(request: ModelRequest, text: str | None, calls: Sequence[ToolCall]) -> Usage:
    """Estimated usage for servers that report none."""
    output = estimate_tokens(text)
    for call in calls:
        output += estimate_tokens(call.name) + estimate_tokens(call.arguments)
    return Usage(input=estimate_prompt(request.messages, request.tools), output=max(output, 1))


def arguments_text(value: object) -> str:
    """Tool-call arguments as raw text; some servers send an object instead of a string."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def calls_from_wire(raw: object) -> tuple[ToolCall, ...]:
    """Tool calls from a wire message's tool_calls list; missing ids become call_<n>."""
    if not isinstance(raw, list):
        return ()
    calls = []
    for n, item in enumerate(raw):
        function = item.get("function") if isinstance(item, Mapping) else None
        if not isinstance(function, Mapping):
            raise ModelResponseError(f"tool call {n} has no function object: {str(item)[:200]}")
        calls.append(
            ToolCall(
                id=str(item.get("id") or f"call_{n}"),
                name=str(function.get("name") or ""),
                arguments=arguments_text(function.get("arguments")),
            )
        )
    return tuple(calls)


def content_text(raw: object) -> str | None:
    """Message content as text; joins the text parts of a list-shaped content."""
    if isinstance(raw, list):
        parts = [p.get("text", "") for p in raw if isinstance(p, Mapping)]
        raw = "".join(str(p) for p in parts)
    return str(raw) if raw else None


def calls_from_text(text: str, offered: Sequence[ToolSpec]) -> tuple[tuple[ToolCall, ...], str]:
    """Tool calls a server wrote into the content as JSON text, and the text left over."""
    names = {spec.name for spec in offered}
    tagged = _TOOL_TAG.findall(text)
    candidates = tagged or [_FENCE.sub(r"\1", text.strip())]
    calls: list[ToolCall] = []
    for chunk in candidates:
        calls.extend(_json_calls(chunk, names, start=len(calls)))
    if not calls:
        return (), text
    rest = _TOOL_TAG.sub("", text).strip() if tagged else ""
    return tuple(calls), rest


def _json_calls(chunk: str, names: set[str], *, start: int) -> list[ToolCall]:
    """Calls in one JSON snippet: an object or a list of objects naming an offered tool."""
    try:
        value = json.loads(chunk)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, Mapping):
            return []
        # An OpenAI-shaped call written out as text nests name and arguments under "function".
        call = item["function"] if isinstance(item.get("function"), Mapping) else item
        name = call.get("name")
        if name not in names:
            return []
        args = call.get("arguments", call.get("parameters"))
        calls.append(ToolCall(f"call_{start + len(calls)}", str(name), arguments_text(args)))
    return calls


def response_from_body(body: object, request: ModelRequest, *, model: str) -> ModelResponse:
    """A ModelResponse from a decoded non-streamed chat-completions body."""
    message, reason = _first_choice(body)
    assert isinstance(body, Mapping)
    text = content_text(message.get("content"))
    calls = calls_from_wire(message.get("tool_calls"))
    return assemble(
        request,
        text=text,
        calls=calls,
        reason=reason,
        usage=usage_from_wire(body.get("usage")),
        model=str(body.get("model") or model),
    )


def _first_choice(body: object) -> tuple[Mapping[str, object], object]:
    """The message and finish reason of the first choice; ModelResponseError when absent."""
    if not isinstance(body, Mapping):
        raise ModelResponseError(f"the response body is not a JSON object: {str(body)[:200]}")
    if isinstance(body.get("error"), Mapping):
        raise ModelResponseError(f"the endpoint answered an error: {body['error'].get('message')}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ModelResponseError(f"the response has no choices: {json.dumps(body)[:200]}")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise ModelResponseError("the first choice of the response has no message")
    return message, choices[0].get("finish_reason")


def assemble(
    request: ModelRequest,
    *,
    text: str | None,
    calls: tuple[ToolCall, ...],
    reason: object,
    usage: Usage | None,
    model: str,
) -> ModelResponse:
    """The final response: text-borne tool calls recovered, usage estimated when missing."""
    if not calls and text and request.tools:
        calls, rest = calls_from_text(text, request.tools)
        text = (rest or None) if calls else text
    if usage is None:
        usage = estimate_usage(request, text, calls)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=usage,
        finish_reason=finish_reason(reason, has_calls=bool(calls)),
        model=model,
    )
