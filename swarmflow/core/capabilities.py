"""What a model's server can do with output: the capability table beside the price table.

Two questions decide how a request is put on the wire:

- `structured`: how a structured answer is asked for. "json_schema" sends the output's schema
  as `response_format: {"type": "json_schema", ...}` (OpenAI, vLLM, Ollama, llama.cpp's own
  server) and the server constrains decoding to it; "json_object" sends it as
  `{"type": "json_object", "schema": ...}` (llama-cpp-python's server); "prompt" only states
  the schema in the prompt. The answer is validated either way. A server that rejects a form
  is detected on the first call and the adapter steps down, json_schema -> json_object ->
  prompt, recording why.
- `forced_tools`: how a forced tool call is asked for. "required" sends
  `tool_choice: "required"`; "named" names the tool when exactly one is offered (and sends
  "required" otherwise); "json_schema" asks for an answer constrained to the union of the
  offered tools, `{"tool": name, "arguments": {...}}`, and reads it back as a tool call. The
  last works on every server with a JSON-schema mode, including those that ignore
  `tool_choice` (llama-cpp-python's server, Ollama).

A model's capabilities come from, in order: an override given for it (`OpenAIModel(...,
capabilities=...)`, `--structured-mode`, `--forced-tool-mode`), the known-model table below
(exact name, then the longest prefix), then the default of its base URL's kind.

Pinned modes do not step down: `OpenAIModel(..., pin_modes=True)` pins one adapter's, and
`pinned_modes()` pins every adapter's for the calls made inside it (`run(..., pin_modes=True)`
and `Experiment(pin_modes=True)` use it), so a rejected form fails the call loudly.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import urlsplit

StructuredMode = Literal["json_schema", "json_object", "prompt"]
ForcedToolMode = Literal["required", "named", "json_schema"]
ServerKind = Literal["openai", "ollama", "local", "hosted"]

STRUCTURED_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "prompt")
FORCED_TOOL_MODES: tuple[ForcedToolMode, ...] = ("required", "named", "json_schema")
OLLAMA_PORT = 11434


@dataclass(frozen=True, slots=True)
class Capabilities:
    """How structured answers and forced tool calls are asked of one model."""

    structured: StructuredMode = "json_schema"
    """How a structured answer is asked for: "json_schema", "json_object" or "prompt"."""
    forced_tools: ForcedToolMode = "required"
    """How a forced tool call is asked for: "required", "named" or "json_schema"."""

    def __post_init__(self) -> None:
        if self.structured not in STRUCTURED_MODES:
            raise ValueError(
                f"structured={self.structured!r}; use one of {', '.join(STRUCTURED_MODES)}"
            )
        if self.forced_tools not in FORCED_TOOL_MODES:
            raise ValueError(
                f"forced_tools={self.forced_tools!r}; use one of {', '.join(FORCED_TOOL_MODES)}"
            )


# By the kind of server a base URL points at. Self-hosted servers (llama.cpp, Ollama, and
# vLLM behind a private address) all have a JSON-schema mode, but not all honour "required".
KIND_DEFAULTS: Mapping[ServerKind, Capabilities] = {
    "openai": Capabilities("json_schema", "required"),
    "hosted": Capabilities("json_schema", "required"),
    "ollama": Capabilities("json_schema", "json_schema"),
    "local": Capabilities("json_schema", "json_schema"),
}

# Models whose capabilities differ from their server kind's default.
KNOWN_MODELS: Mapping[str, Capabilities] = {
    "gpt-3.5": Capabilities("prompt", "required"),  # no structured outputs
    "gpt-4-": Capabilities("prompt", "required"),
    "gpt-4o": Capabilities("json_schema", "required"),
    "gpt-4.1": Capabilities("json_schema", "required"),
    "gpt-5": Capabilities("json_schema", "required"),
    "o3": Capabilities("json_schema", "required"),
    "o4-mini": Capabilities("json_schema", "required"),
}


def server_kind(base_url: str) -> ServerKind:
    """The kind of server a base URL points at, from its host and port alone."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if host == "api.openai.com":
        return "openai"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port == OLLAMA_PORT:
        return "ollama"
    return "local" if _is_local(host) else "hosted"


def _is_local(host: str) -> bool:
    """Loopback, private or link-local addresses and single-label names are self-hosted."""
    if host == "localhost" or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host  # a bare name such as a container's: on the same network
    return address.is_loopback or address.is_private or address.is_link_local


def capabilities_for(
    model: str, base_url: str, override: Capabilities | Mapping[str, str] | None = None
) -> Capabilities:
    """The capabilities of `model` served at `base_url`; `override` wins when given.

    An override given as a mapping fills in only the keys it names, on top of what the
    table says for this model.
    """
    found = _known(model)
    base = found if found is not None else KIND_DEFAULTS[server_kind(base_url)]
    if override is None:
        return base
    return override if isinstance(override, Capabilities) else _from_map(base, override)


def _known(model: str) -> Capabilities | None:
    """The known-model entry for `model`: exact name, then the longest prefix."""
    if model in KNOWN_MODELS:
        return KNOWN_MODELS[model]
    matches = [name for name in KNOWN_MODELS if model.startswith(name)]
    return KNOWN_MODELS[max(matches, key=len)] if matches else None


def _from_map(base: Capabilities, value: Mapping[str, str]) -> Capabilities:
    """`base` with the capabilities a mapping names replaced."""
    unknown = set(value) - {"structured", "forced_tools"}
    if unknown:
        raise ValueError(
            f"unknown capability {sorted(unknown)[0]!r}; use 'structured' or 'forced_tools'"
        )
    return replace(base, **value)  # type: ignore[arg-type]


_PINNED: ContextVar[bool] = ContextVar("swarmflow_pinned_modes", default=False)


@contextmanager
def pinned_modes(pinned: bool = True) -> Iterator[None]:
    """Pin every adapter's output modes for the calls made inside (and in tasks started there)."""
    token = _PINNED.set(pinned or _PINNED.get())
    try:
        yield
    finally:
        _PINNED.reset(token)


def modes_are_pinned() -> bool:
    """Whether the calls made here are inside `pinned_modes()`."""
    return _PINNED.get()
