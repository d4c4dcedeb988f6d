"""A loopback OpenAI-compatible server with a prefix cache, for tests and benchmarks.

It keeps a prefix cache over each prompt's token stream the way vLLM's automatic prefix
caching and SGLang's radix cache do, so that a run against it reports in
`usage.prompt_tokens_details.cached_tokens` what a real server would have served from its
cache: the prompt (tool schemas first, then each message, rendered as one text) is cut into
tokens, the tokens into blocks of `block_tokens`; each full block is keyed by a hash of its
tokens and of every block before it, so a block is found only behind the same prefix. A
request is served the leading blocks already cached (the last prompt token is always
computed, as vLLM does), then all of its full blocks are cached. The cache holds at most
`capacity_blocks` blocks, shared by every session and evicted least recently used.

It answers with a policy: a function from the request body to the assistant's message
(`{"content": ..., "tool_calls": [...]}`) or its text. It runs in a thread of the calling
process and serves plain (non-streamed) chat completions.

    with CachingServer(lambda body: "done") as server:
        model = OpenAIModel("cached", base_url=server.url, api_key="sk-local")
        ...
        server.cache.hits  # cached tokens served so far
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["CachedRequest", "CachingServer", "PrefixCache", "prompt_tokens"]

Policy = Callable[[dict[str, Any]], "str | dict[str, Any]"]
_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")
"""A token: a word, one punctuation mark or a run of white space (a BPE's rough cut)."""


def prompt_tokens(body: dict[str, Any]) -> list[str]:
    """The request's prompt as a server lays it out, cut into tokens: the tool schemas, then
    each message with its role (the chat template's order)."""
    parts = [f"<|tools|>{json.dumps(body.get('tools') or [], sort_keys=True)}"]
    for message in body.get("messages") or []:
        rest = {k: v for k, v in message.items() if k != "role"}
        parts.append(f"<|{message.get('role')}|>{json.dumps(rest, sort_keys=True)}")
    return _TOKEN.findall("".join(parts))


@dataclass(frozen=True, slots=True)
class CachedRequest:
    """One request's prompt and the part of it served from the cache, in tokens."""

    prompt_tokens: int
    cached_tokens: int
    user: str | None = None
    """The request's `user` field, when it names one (a way to tell sessions apart)."""


@dataclass
class PrefixCache:
    """Block-granular prefix cache with least-recently-used eviction."""

    block_tokens: int = 16
    capacity_blocks: int = 65_536
    blocks: OrderedDict[bytes, None] = field(default_factory=OrderedDict)
    requests: list[CachedRequest] = field(default_factory=list)
    evicted: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def serve(self, tokens: Sequence[str], user: str | None = None) -> CachedRequest:
        """The cached tokens `tokens` begins with; then cache its full blocks."""
        keys = self._keys(tokens)
        with self._lock:
            hit = 0
            for key in keys:
                if key not in self.blocks:
                    break
                self.blocks.move_to_end(key)
                hit += 1
            for key in keys[hit:]:
                self.blocks[key] = None
            while len(self.blocks) > self.capacity_blocks:
                self.blocks.popitem(last=False)
                self.evicted += 1
            # The last prompt token is computed even when every block is cached.
            most = (len(tokens) - 1) // self.block_tokens * self.block_tokens
            served = CachedRequest(len(tokens), min(hit * self.block_tokens, most), user)
            self.requests.append(served)
        return served

    def _keys(self, tokens: Sequence[str]) -> list[bytes]:
        """Each full block's key: a hash of its tokens chained to the block before."""
        keys, parent, size = [], b"", self.block_tokens
        for start in range(0, len(tokens) - size + 1, size):
            digest = hashlib.blake2b(parent, digest_size=16)
            digest.update("\x00".join(tokens[start : start + size]).encode())
            parent = digest.digest()
            keys.append(parent)
        return keys

    @property
    def hits(self) -> int:
        return sum(r.cached_tokens for r in self.requests)

    @property
    def prompts(self) -> int:
        return sum(r.prompt_tokens for r in self.requests)


def _message(answer: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(answer, str):
        return {"role": "assistant", "content": answer}
    return {"role": "assistant", "content": None, **answer}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Silent: a test's output is its own."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
            tokens = prompt_tokens(body)
        except (ValueError, AttributeError, TypeError) as exc:
            self._send(400, {"error": {"message": f"bad request body: {exc}", "type": "bad"}})
            return
        served = self.server.cache.serve(tokens, body.get("user"))
        with self.server.lock:
            self.server.exchanges.append((body, served))
        message = _message(self.server.policy(body))
        self._send(200, _completion(body, message, served))

    def _send(self, status: int, payload: dict[str, object]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _completion(
    body: dict[str, Any], message: dict[str, Any], served: CachedRequest
) -> dict[str, Any]:
    calls = message.get("tool_calls")
    said = (message.get("content") or "") + (json.dumps(calls) if calls else "")
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{len(said)}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "caching-server"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": served.prompt_tokens,
            "completion_tokens": len(_TOKEN.findall(said)),
            "total_tokens": served.prompt_tokens + len(_TOKEN.findall(said)),
            "prompt_tokens_details": {"cached_tokens": served.cached_tokens},
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cache: PrefixCache
    policy: Policy
    exchanges: list[tuple[dict[str, Any], CachedRequest]]
    lock: threading.Lock


class CachingServer:
    """The server on a free loopback port, in a thread, while its `with` block runs."""

    def __init__(
        self,
        policy: Policy = lambda body: "done",
        *,
        block_tokens: int = 16,
        capacity_blocks: int = 65_536,
    ) -> None:
        self.cache = PrefixCache(block_tokens, capacity_blocks)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.cache, self._server.policy = self.cache, policy
        self._server.lock = threading.Lock()
        self.exchanges: list[tuple[dict[str, Any], CachedRequest]] = []
        self._server.exchanges = self.exchanges
        """Each request body received with what the cache served it, in the order served."""
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> CachingServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
