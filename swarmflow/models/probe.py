"""Asking an OpenAI-compatible endpoint what it honours, before a run's first call.

Each question is one small request to the endpoint, with the model's own answer checked:

- **structured answers**: `response_format` as a JSON schema (`json_schema`), then as
  llama-cpp-python's `{"type": "json_object", "schema": ...}` (`json_object`): honoured when
  the answer is a JSON object with the schema's required key; neither: `prompt`;
- **forced tool calls**: `tool_choice: "required"`, honoured when the answer calls the tool;
  else, with a structured form, `json_schema` (an answer constrained to the tools' union,
  which needs no `tool_choice`); else the tool named, which forces one tool only;
- **tool calls unforced**: asked plainly to call the tool, does the model call it, every
  time of `UNFORCED_TRIALS`? A model that does not is run with forced tool calls (a weak model
  that calls a tool once by chance writes prose in a real turn, so one success is not enough);
- **streaming**: two streamed calls at once, each answered whole (`[DONE]` and content);
- **context length**: from `GET /models` (`context_length`, `max_model_len`, `n_ctx`, or
  llama.cpp's `meta.n_ctx_train`) or llama.cpp's `GET /props`, where the server says.

`probe_cached` keeps each endpoint and model's profile in a JSON file (`$SWARMFLOW_PROBES`,
else `~/.cache/swarmflow/endpoints.json`), read back with a size cap, regular files only; a
file that cannot be read is probed again.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from swarmflow.core.capabilities import ForcedToolMode, StructuredMode
from swarmflow.core.errors import ConfigError

PROBES_ENV = "SWARMFLOW_PROBES"
"""The cache file's path (default `~/.cache/swarmflow/endpoints.json`)."""
PROBE_ENV = "SWARMFLOW_PROBE"
"""`off`: a run does not probe its endpoint (the table and the flags choose, as before)."""
MAX_CACHE = 1_000_000
"""The largest cache file read back, in bytes."""
TIMEOUT = 60.0
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}
TOOL = {
    "type": "function",
    "function": {
        "name": "record_answer",
        "description": "Record the answer.",
        "parameters": SCHEMA,
    },
}
ASK = "Reply with the word ok as the answer."
ASK_TOOL = "Call the record_answer tool with the answer ok. Do not reply in text."
UNFORCED_TRIALS = 3
"""How many plain requests must each come back as a tool call for a model to go unforced."""


class ProbeFailed(ConfigError):
    """The endpoint could not be reached."""


@dataclass(frozen=True)
class EndpointProfile:
    """What one endpoint and model honour, as the probe found it."""

    base_url: str
    model: str
    structured: StructuredMode
    forced_tools: ForcedToolMode
    calls_tools_unforced: bool
    streaming: bool
    """Two streamed calls at once were each answered whole."""
    context_length: int | None = None
    notes: list[str] = field(default_factory=list)

    def capabilities(self) -> dict[str, str]:
        return {"structured": self.structured, "forced_tools": self.forced_tools}

    def line(self) -> str:
        """One line saying what a run uses."""
        forced = "forced tool calls" if not self.calls_tools_unforced else "tool calls as asked"
        context = f"{self.context_length:,} tokens" if self.context_length else "not said"
        return (
            f"{self.model} at {self.base_url}: structured answers by {self.structured}, "
            f"{forced} by {self.forced_tools}, {'streamed' if self.streaming else 'not streamed'}"
            f" answers, context {context}"
        )


def probe(base_url: str, model: str, api_key: str | None = None) -> EndpointProfile:
    """Ask the endpoint at `base_url` (with `/v1`) what `model` honours."""
    headers = {"Authorization": f"Bearer {api_key or 'none'}"}
    notes: list[str] = []
    with httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=TIMEOUT) as client:
        ask = _Asker(client, model, notes)
        ask.reachable()
        found: StructuredMode | None = _first(("json_schema", "json_object"), ask.structured)
        structured: StructuredMode = found or "prompt"
        forced = _forced_form(ask, structured)
        unforced = all(ask.tool_call(None) for _ in range(UNFORCED_TRIALS))
        streaming = ask.streams_together()
        context = _context_length(client, base_url)
    return EndpointProfile(
        base_url.rstrip("/"), model, structured, forced, unforced, streaming, context, notes
    )


def _forced_form(ask: _Asker, structured: StructuredMode) -> ForcedToolMode:
    """The forced-tool form that holds for any number of tools: `tool_choice: "required"`
    where honoured, else an answer constrained to the tools' union where a structured form
    works; naming the tool forces one tool only, so it is the last resort."""
    if ask.forced("required"):
        return "required"
    if structured != "prompt":
        return "json_schema"
    return "named" if ask.forced("named") else "required"


T = TypeVar("T")


def _first(forms: tuple[T, ...], honoured: Callable[[T], bool]) -> T | None:
    return next((form for form in forms if honoured(form)), None)


@dataclass
class _Asker:
    client: httpx.Client
    model: str
    notes: list[str]

    def reachable(self) -> None:
        """ProbeFailed when the endpoint cannot be reached at all (nothing else is asked)."""
        try:
            self.client.get("/models")
        except httpx.HTTPError as exc:
            raise ProbeFailed(f"cannot reach {self.client.base_url}: {exc}") from None

    def post(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer's message, or None (the refusal noted)."""
        try:
            answer = self.client.post("/chat/completions", json={"model": self.model, **body})
        except httpx.HTTPError as exc:
            self.notes.append(f"{_what(body)}: {type(exc).__name__}: {exc}")
            return None
        if answer.status_code != 200:
            self.notes.append(f"{_what(body)}: HTTP {answer.status_code}: {answer.text[:200]}")
            return None
        try:
            message: dict[str, Any] = answer.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            self.notes.append(f"{_what(body)}: an answer that is not a chat completion")
            return None
        return message

    def structured(self, form: str) -> bool:
        fmt: dict[str, object] = {"type": "json_object", "schema": SCHEMA}
        if form == "json_schema":
            fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
        message = self.post({"messages": _user(ASK), "response_format": fmt, "max_tokens": 64})
        ok = message is not None and _is_answer(message.get("content"))
        if message is not None and not ok:
            self.notes.append(f"response_format {form}: the answer did not follow the schema")
        return ok

    def forced(self, form: str) -> bool:
        choice: str | dict[str, object] = "required"
        if form == "named":
            choice = {"type": "function", "function": {"name": "record_answer"}}
        return self.tool_call(choice)

    def tool_call(self, choice: str | dict[str, object] | None) -> bool:
        body: dict[str, Any] = {"messages": _user(ASK_TOOL), "tools": [TOOL], "max_tokens": 64}
        if choice is not None:
            body["tool_choice"] = choice
        message = self.post(body)
        calls = (message or {}).get("tool_calls") or []
        return any(
            isinstance(c, dict) and (c.get("function") or {}).get("name") == "record_answer"
            for c in calls
        )

    def streams_together(self) -> bool:
        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(lambda _: self._streamed(), range(2)))
        return all(done)

    def _streamed(self) -> bool:
        body = {"model": self.model, "messages": _user(ASK), "max_tokens": 16, "stream": True}
        text, ended = "", False
        try:
            with self.client.stream("POST", "/chat/completions", json=body) as answer:
                if answer.status_code != 200:
                    self.notes.append(f"stream: HTTP {answer.status_code}")
                    return False
                for line in answer.iter_lines():
                    data = line.removeprefix("data:").strip()
                    if data == "[DONE]":
                        ended = True
                    elif data:
                        text += _delta_text(data)
        except httpx.HTTPError as exc:
            self.notes.append(f"stream: {type(exc).__name__}: {exc}")
            return False
        if not (ended and text):
            self.notes.append("stream: two streamed calls at once were not both answered whole")
        return ended and bool(text)


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _what(body: dict[str, Any]) -> str:
    if "response_format" in body:
        return f"response_format {body['response_format']['type']}"
    if "tool_choice" in body:
        return f"tool_choice {json.dumps(body['tool_choice'])}"
    return "a tool call"


def _is_answer(content: object) -> bool:
    try:
        value = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        return False
    return isinstance(value, dict) and isinstance(value.get("answer"), str)


def _delta_text(data: str) -> str:
    try:
        delta = json.loads(data)["choices"][0]["delta"]
    except (ValueError, KeyError, IndexError, TypeError):
        return ""
    return str(delta.get("content") or "") if isinstance(delta, dict) else ""


_CONTEXT_KEYS = ("context_length", "max_model_len", "n_ctx", "context_window")


def _context_length(client: httpx.Client, base_url: str) -> int | None:
    """The context length the server states for the model, where it states one."""
    for url in ("/models", base_url.rstrip("/").removesuffix("/v1") + "/props"):
        try:
            answer = client.get(url)
            found = _context_in(answer.json()) if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            found = None
        if found:
            return found
    return None


def _context_in(value: object, depth: int = 0) -> int | None:
    """The first context length among `value`'s keys, searched a few levels down."""
    if depth > 4:
        return None
    if isinstance(value, dict):
        for key in (*_CONTEXT_KEYS, "n_ctx_train"):
            if isinstance(value.get(key), int) and value[key] > 0:
                return int(value[key])
        items: list[object] = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    return next((n for n in (_context_in(v, depth + 1) for v in items) if n), None)


# -- the cache ----------------------------------------------------------------------------------


def cache_path() -> Path:
    given = os.environ.get(PROBES_ENV)
    if given:
        return Path(given)
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "swarmflow" / "endpoints.json"


def probe_cached(
    base_url: str, model: str, api_key: str | None = None
) -> tuple[EndpointProfile, bool]:
    """The profile of `model` at `base_url`, probed now or read from the cache, and whether
    it came from the cache."""
    key = f"{base_url.rstrip('/')} {model}"
    known = read_cache(cache_path())
    if isinstance(known.get(key), dict):
        with contextlib.suppress(TypeError, ValueError):  # an older or forged entry: probe again
            return EndpointProfile(**known[key]), True
    profile = probe(base_url, model, api_key)
    known[key] = asdict(profile)
    write_cache(cache_path(), known)
    return profile, False


def read_cache(path: Path) -> dict[str, Any]:
    """The cache's entries; empty when it is missing, not a regular file, too big or broken."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CACHE:
            return {}
        try:
            found = json.loads(fh.read(MAX_CACHE + 1))
        except (ValueError, RecursionError):
            return {}
    return found if isinstance(found, dict) else {}


def write_cache(path: Path, known: Mapping[str, object]) -> None:
    """Replace the cache file whole (a temporary file renamed over it); a cache that cannot
    be written is left alone: the next run probes again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".endpoints-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(known, fh, indent=1)
        os.replace(tmp, path)
    except OSError:
        return


__all__ = [
    "PROBES_ENV",
    "PROBE_ENV",
    "EndpointProfile",
    "ProbeFailed",
    "cache_path",
    "probe",
    "probe_cached",
    "read_cache",
    "write_cache",
]
