"""A scriptable chat-completions server on loopback HTTP, for adapter tests.

Each test scripts the replies it wants (JSON bodies, SSE streams, error statuses, delays) and
then asserts on the request bodies the server recorded. It is real HTTP over a real socket, so
the `openai` SDK and its transport run exactly as they would against a remote endpoint.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

DONE = "[DONE]"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `events` makes it an SSE stream; `delay` holds the answer back.

    `event_delay` is a pause before each stream event after the first, to simulate a stall or a
    slow, steady stream. An event that starts with ":" goes out as an SSE comment (a keep-alive).
    `cut` drops the connection after the events, without ending the chunked body: a stream
    torn by a proxy or a crashed server.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    events: Sequence[str] | None = None
    event_delay: float = 0.0
    cut: bool = False


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        """The request body decoded as JSON."""
        return json.loads(self.raw)


# Reply builders --------------------------------------------------------------------------------


def json_reply(body: Any, *, status: int = 200, **kw: Any) -> Reply:
    """A reply whose body is `body` as JSON."""
    return Reply(status=status, body=json.dumps(body).encode(), **kw)


def raw_reply(text: str, *, status: int = 200, content_type: str = "application/json") -> Reply:
    """A reply with an arbitrary body, e.g. broken JSON."""
    return Reply(status=status, body=text.encode(), content_type=content_type)


def error_reply(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str = "invalid_request_error",
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """An error status with an OpenAI-style error body."""
    error = {"message": message, "type": type, "param": None, "code": code}
    return json_reply({"error": error}, status=status, headers=dict(headers or {}))


def usage(prompt: int = 10, completion: int = 5, cached: int | None = None) -> dict[str, Any]:
    """A wire usage object."""
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    return out


def wire_call(name: str, arguments: str, call_id: str | None = "call_a") -> dict[str, Any]:
    """A tool call as a non-streamed message carries it."""
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return call


def completion(
    text: str | None = "hello",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "test-model",
    **kw: Any,
) -> Reply:
    """A non-streamed chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return json_reply(body, **kw)


def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    """One streamed chunk carrying `delta` in its first choice."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        **extra,
    }


def sse_reply(chunks: Iterable[dict[str, Any] | str], *, done: bool = True, **kw: Any) -> Reply:
    """An SSE stream of the given chunks (dicts become JSON), ending with [DONE]."""
    events = [c if isinstance(c, str) else json.dumps(c) for c in chunks]
    return Reply(events=[*events, DONE] if done else events, content_type="text/event-stream", **kw)


def usage_chunk(**kw: Any) -> dict[str, Any]:
    """The final usage-only chunk that stream_options.include_usage asks for."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [],
        "usage": usage(**kw),
    }


def stream_text(
    pieces: Sequence[str], *, with_usage: dict[str, Any] | None = None, finish: str = "stop"
) -> Reply:
    """A streamed text answer; with_usage adds a final usage chunk built by `usage`."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in pieces]
    chunks.append(chunk({}, finish))
    if with_usage is not None:
        chunks.append(usage_chunk(**with_usage))
    return sse_reply(chunks)


# The server ------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body go out in separate writes; with Nagle on, delayed ACKs add 40 ms to each.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read recorded requests instead of access logs."""

    def do_GET(self) -> None:
        """/v1/models, enough for health checks."""
        self._record(b"")
        models = {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
        self._send(json_reply(self.server.owner.models or models))

    def do_POST(self) -> None:
        """Record the request, then play the next scripted reply."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record(raw)
        reply = self.server.owner.next_reply(raw)
        if reply.delay and self.server.owner.stopping.wait(reply.delay):
            self.close_connection = True
            return
        self._send(reply)

    def _record(self, raw: bytes) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.owner.record(Recorded(self.command, self.path, headers, raw))

    def _send(self, reply: Reply) -> None:
        try:
            if reply.events is None:
                self._send_body(reply)
            else:
                self._send_events(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up, e.g. after its timeout

    def _send_head(self, reply: Reply, extra: Mapping[str, str]) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in {**extra, **reply.headers}.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_body(self, reply: Reply) -> None:
        self._send_head(reply, {"Content-Length": str(len(reply.body))})
        self.wfile.write(reply.body)
        self.wfile.flush()

    def _send_events(self, reply: Reply) -> None:
        self._send_head(reply, {"Transfer-Encoding": "chunked", "Cache-Control": "no-cache"})
        for n, event in enumerate(reply.events or ()):
            if n and reply.event_delay and self.server.owner.stopping.wait(reply.event_delay):
                self.close_connection = True
                return
            line = event if event.startswith(":") else f"data: {event}"  # ":" opens a comment
            self._write_chunk(f"{line}\n\n".encode())
        if reply.cut:
            self.close_connection = True
            return
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ChatServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Keep handler failures for the test to see instead of printing them."""
        import sys

        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            self.owner.errors.append(repr(error))


class ChatServer:
    """A loopback chat-completions server; use as a context manager or via the fixture."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or error_reply(500, "chat_server: no scripted reply left")
        self.responder: Callable[[Any], Reply | None] | None = None
        self.models: dict[str, Any] | None = None
        """What GET answers instead of the one test model (a server that states more)."""
        self.requests: list[Recorded] = []
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to hand to a client, including /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies, played in order, one per request."""
        with self._lock:
            self._replies.extend(replies)

    def respond_with(self, responder: Callable[[Any], Reply | None]) -> None:
        """Answer each request by `responder(body)` (the decoded JSON body) before the script.

        It returns a reply, or None to play the next scripted one: a server that behaves by
        what it is asked, e.g. one that rejects a request field.
        """
        self.responder = responder

    def next_reply(self, raw: bytes = b"") -> Reply:
        if self.responder is not None and raw:
            reply = self.responder(json.loads(raw))
            if reply is not None:
                return reply
        with self._lock:
            return self._replies.popleft() if self._replies else self.default

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the chat-completions requests received so far."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def last(self) -> Any:
        """The JSON body of the latest chat-completions request."""
        return self.bodies[-1]

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes handlers that are holding a delayed reply
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
