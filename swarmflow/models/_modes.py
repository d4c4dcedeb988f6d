"""Structured answers and forced tool calls on the wire, as the model's capabilities say.

`WireModes` holds what this adapter has learnt about its server (its endpoint): which
`response_format` form it accepts and how a forced tool call is asked for. It shapes each
payload and reads the answer back, so that a JSON-schema-constrained tool call comes out as an
ordinary `ToolCall`.

How a mode is chosen and kept: the starting modes are the `Capabilities` the adapter is given
(the capability table, an override, or whatever a probe of the server found). When the server
rejects the form a call sent, the endpoint steps down one form (json_schema -> json_object ->
prompt), decided once from that call's own form: calls that were in flight with the same form
and are rejected too find the step taken and are sent again in the new form, never stepping
down a second time. The change is reported once, as a `ModeChange`. With `pinned=True` (or
inside `pinned_modes()`, as a run or an experiment asks) a rejection steps nothing down: the
call fails with `ModePinnedError`, saying which form the server refused.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from swarmflow.core.capabilities import Capabilities, StructuredMode, modes_are_pinned
from swarmflow.core.errors import ModelResponseError
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec

_STEP_DOWN: Mapping[StructuredMode, StructuredMode] = {
    "json_schema": "json_object",
    "json_object": "prompt",
}
_REJECTION_WORDS = ("response_format", "json_schema", "json_object")
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


Force = bool | Literal["first"]
"""Forcing tool calls: never, on every call that offers tools, or on a turn's first call only."""


class ModePinnedError(ModelResponseError):
    """The server rejected a pinned form: the call fails instead of stepping down."""


@dataclass(frozen=True, slots=True)
class ModeChange:
    """The endpoint stepped down from a form the server rejected: reported once."""

    rejected: StructuredMode
    chosen: StructuredMode
    reason: str
    """What the server said, shortened."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How one request goes on the wire."""

    form: StructuredMode | None
    """The form this call asks of the server: a structured answer's, or the tools' union's when
    a forced call goes as a JSON answer; None when it asks for neither."""
    forced: bool
    """True when this call must come back as a tool call."""
    json_tools: bool
    """True when the forced call is asked for as a JSON answer over the tools' union."""

    @property
    def output_form(self) -> StructuredMode | None:
        """The form of a structured answer; None when none is wanted."""
        return None if self.json_tools else self.form


class WireModes:
    """The adapter's modes for one server, with what it has learnt from rejections."""

    def __init__(self, capabilities: Capabilities, *, pinned: bool = False) -> None:
        self.capabilities = capabilities
        self.form: StructuredMode = capabilities.structured
        """The form asked for now: the capabilities' own, or the one stepped down to."""
        self.pinned = pinned
        """True: a rejected form fails the call instead of stepping down."""

    def plan(self, request: ModelRequest, *, force: Force) -> Plan:
        """The plan for `request`: a structured answer is never forced into a tool call."""
        form = self.form  # read once: the plan remembers what this call sends
        if request.output is not None:
            return Plan(form, forced=False, json_tools=False)
        forced = _forcing(request, force)
        json_tools = forced and self.capabilities.forced_tools == "json_schema" and form != "prompt"
        return Plan(form if json_tools else None, forced, json_tools)

    def shape(self, payload: dict[str, object], request: ModelRequest, plan: Plan) -> None:
        """Add the plan's fields to a payload built for `request`."""
        if plan.output_form is not None and request.output is not None:
            fmt = response_format(plan.output_form, request.output.name, request.output.schema)
            if fmt is not None:
                payload["response_format"] = fmt
        if plan.json_tools and plan.form is not None:
            _shape_json_tools(payload, request, plan.form)
        elif request.tools:
            payload["tool_choice"] = self._tool_choice(request, force=plan.forced)

    def _tool_choice(self, request: ModelRequest, *, force: bool) -> str | dict[str, object]:
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
        """The response with the plan's form recorded (`output_mode`) and a JSON tool answer
        made a call."""
        if plan.form is not None:
            response = replace(response, output_mode=plan.form)
        if plan.json_tools and not response.tool_calls and response.text:
            call = json_tool_call(response.text, request.tools)
            if call is not None:
                return replace(response, text=None, tool_calls=(call,), finish_reason="tool_calls")
        return response

    def step_down(self, plan: Plan, message: str) -> tuple[str, ModeChange | None] | None:
        """After a 400/422: why the call goes again in a lower form, with the change when this
        call's rejection made it (None when a concurrent call had made it already); None when
        the rejection was not of the form.

        Raises:
            ModePinnedError: the modes are pinned, so the rejected form is not given up.
        """
        sent = plan.form
        if sent is None or sent == "prompt":
            return None
        if not any(word in message.lower() for word in _REJECTION_WORDS):
            return None
        if self.pinned or modes_are_pinned():
            raise ModePinnedError(
                f"the server rejected response_format {sent!r}, and the output modes are "
                f"pinned, so they do not step down: {message[:300]}"
            )
        change = None
        if sent == self.form:  # else a call sent in the same form has stepped down already
            self.form = _STEP_DOWN[sent]
            change = ModeChange(sent, self.form, message[:300])
        then = (
            "structured answers are asked for in the prompt and validated"
            if self.form == "prompt"
            else f"response_format {self.form!r} is tried instead"
        )
        return f"the server rejected response_format {sent!r}; {then}: {message[:300]}", change


def response_format(
    form: StructuredMode, name: str, schema: Mapping[str, object]
) -> dict[str, object] | None:
    """The response_format field for `form`; None for "prompt"."""
    if form == "json_schema":
        # Not strict: OpenAI's strict mode needs every property required and no extras,
        # which ordinary pydantic schemas are not; the answer is validated afterwards anyway.
        named = {"name": _NAME.sub("_", name)[:64] or "answer", "schema": schema, "strict": False}
        return {"type": "json_schema", "json_schema": named}
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def tool_union_schema(tools: Sequence[ToolSpec]) -> dict[str, object]:
    """A schema whose instances are exactly the calls of one of `tools`."""
    branches: list[dict[str, object]] = [
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


def _named(name: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name}}


def _shape_json_tools(
    payload: dict[str, object], request: ModelRequest, form: StructuredMode
) -> None:
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


def _plain_turn(message: Message) -> dict[str, object]:
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
        arguments: object = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = call.arguments
    return json.dumps({"tool": call.name, "arguments": arguments})
