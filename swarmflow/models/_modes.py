"""Structured answers and forced tool calls on the wire, as the model's capabilities say.

`WireModes` holds what this adapter has learnt about its server: which `response_format` form
it accepts (stepping down json_schema -> json_object -> prompt when one is rejected) and how a
forced tool call is asked for. It shapes each payload and reads the answer back, so that a
JSON-schema-constrained tool call comes out as an ordinary `ToolCall`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from swarmflow.core.capabilities import Capabilities, StructuredMode
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec

_STEP_DOWN: Mapping[StructuredMode, StructuredMode] = {
    "json_schema": "json_object",
    "json_object": "prompt",
}
_REJECTION_WORDS = ("response_format", "json_schema", "json_object")
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


Force = bool | Literal["first"]
"""Forcing tool calls: never, on every call that offers tools, or on a turn's first call only."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How one request goes on the wire."""

    output_form: StructuredMode | None
    """The response_format form of a structured answer; None when none is wanted."""
    forced: bool
    """True when this call must come back as a tool call."""
    json_tools: bool
    """True when the forced call is asked for as a JSON answer over the tools' union."""


class WireModes:
    """The adapter's modes for one server, with what it has learnt from rejections."""

    def __init__(self, capabilities: Capabilities) -> None:
        self.capabilities = capabilities
        self.form: StructuredMode = capabilities.structured

    def plan(self, request: ModelRequest, *, force: Force) -> Plan:
        """The plan for `request`: a structured answer is never forced into a tool call."""
        if request.output is not None:
            return Plan(self.form, forced=False, json_tools=False)
        forced = _forcing(request, force)
        json_tools = (
            forced and self.capabilities.forced_tools == "json_schema" and self.form != "prompt"
        )
        return Plan(None, forced, json_tools)

    def shape(self, payload: dict[str, Any], request: ModelRequest, plan: Plan) -> None:
        """Add the plan's fields to a payload built for `request`."""
        if plan.output_form is not None and request.output is not None:
            fmt = response_format(plan.output_form, request.output.name, request.output.schema)
            if fmt is not None:
                payload["response_format"] = fmt
        if plan.json_tools:
            _shape_json_tools(payload, request, self.form)
        elif request.tools:
            payload["tool_choice"] = self._tool_choice(request, force=plan.forced)

    def _tool_choice(self, request: ModelRequest, *, force: bool) -> str | dict[str, Any]:
        """The wire tool_choice: named for a named choice, or when forcing one tool by name."""
        choice = request.tool_choice
        if force and choice in ("auto", "required"):
            if self.capabilities.forced_tools == "named" and len(request.tools) == 1:
                return _named(request.tools[0].name)
            return "required"
        if choice in ("auto", "required", "none"):
            return choice
        return _named(choice)

    def read(self, response: ModelResponse, request: ModelRequest, plan: Plan) -> ModelResponse:
        """The response with the plan's mode recorded and a JSON tool answer made a call."""
        if plan.output_form is not None:
            return replace(response, output_mode=plan.output_form)
        if plan.json_tools and not response.tool_calls and response.text:
            call = json_tool_call(response.text, request.tools)
            if call is not None:
                return replace(response, text=None, tool_calls=(call,), finish_reason="tool_calls")
        return response

    def step_down(self, plan: Plan, message: str) -> str | None:
        """After a 400/422: give up the rejected form and say why; None if it was not that."""
        sent_form = plan.output_form or (self.form if plan.json_tools else None)
        if sent_form is None or sent_form == "prompt":
            return None
        if not any(word in message.lower() for word in _REJECTION_WORDS):
            return None
        if sent_form == self.form:  # else a concurrent call has stepped down already
            self.form = _STEP_DOWN[sent_form]
        then = (
            "structured answers are asked for in the prompt and validated"
            if self.form == "prompt"
            else f"response_format {self.form!r} is tried instead"
        )
        return f"the server rejected response_format {sent_form!r}; {then}: {message[:300]}"


def response_format(form: StructuredMode, name: str, schema: dict[str, Any]) -> Any:
    """The response_format field for `form`; None for "prompt"."""
    if form == "json_schema":
        # Not strict: OpenAI's strict mode needs every property required and no extras,
        # which ordinary pydantic schemas are not; the answer is validated afterwards anyway.
        named = {"name": _NAME.sub("_", name)[:64] or "answer", "schema": schema, "strict": False}
        return {"type": "json_schema", "json_schema": named}
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def tool_union_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """A schema whose instances are exactly the calls of one of `tools`."""
    branches = [
        {
            "type": "object",
            "description": spec.description,
            "properties": {
                "tool": {"type": "string", "enum": [spec.name]},
                "arguments": spec.parameters or {"type": "object", "properties": {}},
            },
            "required": ["tool", "arguments"],
        }
        for spec in tools
    ]
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def tool_instructions(tools: Sequence[ToolSpec]) -> str:
    """The tools described in words, for a model that sees them only as a JSON schema."""
    lines = [
        "Call exactly one of these tools. Answer with only a JSON object "
        '{"tool": <tool name>, "arguments": {<the tool\'s arguments>}}.'
    ]
    for spec in tools:
        params = json.dumps(spec.parameters or {}, separators=(",", ":"))
        lines.append(f"- {spec.name}: {spec.description} Arguments: {params}")
    return "\n".join(lines)


def json_tool_call(text: str, tools: Sequence[ToolSpec]) -> ToolCall | None:
    """The tool call a JSON answer `{"tool": ..., "arguments": {...}}` names, if it is one."""
    try:
        value = json.loads(text.strip())
    except ValueError:
        return None
    names = {spec.name for spec in tools}
    if not isinstance(value, Mapping) or value.get("tool") not in names:
        return None
    arguments = value.get("arguments", {})
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(f"call_{uuid.uuid4().hex[:12]}", str(value["tool"]), raw)


def _forcing(request: ModelRequest, force: Force) -> bool:
    """Whether `request` must come back as a tool call.

    "first" forces only a turn's first call (the last message is the user's), so that a model
    looks something up before it answers and may answer in words once it has.
    """
    if not force or not request.tools or request.tool_choice == "none":
        return False
    last = request.last
    return force is True or (last is not None and last.role == "user")


def _named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def _shape_json_tools(payload: dict[str, Any], request: ModelRequest, form: StructuredMode) -> None:
    """Ask for a tool call as a JSON answer: no tools on the wire, the union as the schema.

    The history's earlier calls and results become plain turns: without tools on the wire a
    server's chat template may not render them, and the model then sees its own JSON answers.
    """
    payload.pop("tools", None)
    payload.pop("tool_choice", None)
    named = [spec for spec in request.tools if spec.name == request.tool_choice]
    tools = named or list(request.tools)
    messages = [_plain_turn(m) for m in request.messages]
    note = tool_instructions(tools)
    if messages and messages[0]["role"] == "system":
        messages[0]["content"] = f"{messages[0]['content']}\n\n{note}"
    else:
        messages.insert(0, {"role": "system", "content": note})
    payload["messages"] = messages
    payload["response_format"] = response_format(form, "tool_call", tool_union_schema(tools))


def _plain_turn(message: Message) -> dict[str, Any]:
    """A message as a plain chat turn: tool calls as their JSON, tool results as user turns."""
    if message.role == "tool":
        return {"role": "user", "content": f"Tool result:\n{message.content or ''}"}
    content = message.content or ""
    if message.role == "assistant" and message.tool_calls:
        calls = [_call_json(call) for call in message.tool_calls]
        content = "\n".join(filter(None, [content, *calls]))
    return {"role": message.role, "content": content}


def _call_json(call: ToolCall) -> str:
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = call.arguments
    return json.dumps({"tool": call.name, "arguments": arguments})
