"""What goes into a model and what comes out: the one small model protocol.

Plain frozen dataclasses: adapters convert them to and from wire formats. Token estimates
live in `swarmflow.core.tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pydantic import JsonValue

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for. `arguments` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, JsonValue]:
        """The arguments as a dict; raises ValueError with a readable message when broken."""
        return decode_arguments(self.name, self.arguments)


def decode_arguments(name: str, raw: str) -> dict[str, JsonValue]:
    """The JSON object in a tool call's raw arguments (empty text means no arguments).

    Raises:
        ValueError: naming the tool and where the JSON breaks, or that it is not an object.
    """
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"arguments of tool {name!r} are not valid JSON: {exc.msg} "
            f"at position {exc.pos}: {raw[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments of tool {name!r} must be a JSON object, got {raw[:200]!r}")
    return value


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """A structured answer the caller wants: the output type's name and its JSON schema.

    Adapters that can constrain decoding to a schema use it; the caller validates the answer
    either way, so an adapter that cannot is free to ignore it. The requests for one output
    type share one spec and its schema: read it, never change it.
    """

    name: str
    schema: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call. `cached_input` is the part of `input` served from a prompt cache."""

    input: int = 0
    output: int = 0
    cached_input: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cached_input + other.cached_input,
        )


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything a model needs for one call."""

    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    agent: str = ""
    model: str | None = None
    max_tokens: int = 4096
    tool_choice: Literal["auto", "required", "none"] | str = "auto"
    temperature: float | None = None
    estimated_prompt_tokens: int = 0
    """The session's running estimate of the prompt's tokens (0 when unknown)."""
    output: OutputSpec | None = None
    """The structured answer this call should produce, when the caller wants one."""

    @property
    def prompt(self) -> str:
        """The content of the latest user message (what the agent was just asked)."""
        for m in reversed(self.messages):
            if m.role == "user":
                return m.content or ""
        return ""

    @property
    def system(self) -> str:
        """The rendered role card, if any."""
        first = self.messages[0] if self.messages else None
        return (first.content or "") if first is not None and first.role == "system" else ""

    @property
    def last(self) -> Message | None:
        return self.messages[-1] if self.messages else None


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model answered."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "stop"
    model: str | None = None
    output_mode: str | None = None
    """The form asked of the server: a structured answer's ("json_schema", "json_object" or
    "prompt"), or a forced tool call's when it went as a JSON answer; None when neither."""


@runtime_checkable
class Model(Protocol):
    """The one protocol every model adapter implements."""

    name: str

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request."""
