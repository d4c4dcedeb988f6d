"""A body too large gets its 413 every time, however the program reaches the endpoint: over
loopback TCP (a program on the host) or through a relay that copies a Unix socket to it (the
board's way into the sandbox). The endpoint closes a refused connection lingering, and the
relay delivers an answer the server sent before it stopped reading."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteStream

from swarmflow.harnesses.http_server import Bounds, HttpRequest, HttpServer, Reply
from swarmflow.harnesses.relay import relay_unix_to_tcp

BODY = b"x" * (8 << 20)
TRIES = 10


async def _never_called(request: HttpRequest) -> Reply:
    raise AssertionError("a body too large reached the handler")


async def _upload(client: ByteStream) -> bytes:
    """Send a request with a large body, then read the answer (its head and the body its
    `content-length` gives), as an HTTP client does, and close."""
    async with client:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await client.send(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                              b"content-length: %d\r\n\r\n" % len(BODY))  # fmt: skip
            await client.send(BODY)
        answer = b""
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            while not _whole(answer):
                answer += await client.receive()
        return answer


def _whole(answer: bytes) -> bool:
    head, found, body = answer.partition(b"\r\n\r\n")
    if not found:
        return False
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))  # fmt: skip
    return len(body) >= length


@pytest.mark.parametrize("way", ["tcp", "relay"])
async def test_a_body_too_large_gets_its_413_every_time(tmp_path: Path, way: str) -> None:
    refused: list[int] = []
    server = HttpServer(_never_called, Bounds(max_body=1_000),
                        lambda kind, reason, status: refused.append(status))  # fmt: skip
    listener = (await anyio.create_tcp_listener(local_host="127.0.0.1")).listeners[0]
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    path = tmp_path / "endpoint.sock"
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, listener, tg)
        listening = anyio.Event()
        tg.start_soon(relay_unix_to_tcp, path, port, tg, listening)
        await listening.wait()
        answers = []
        for _ in range(TRIES):
            if way == "tcp":
                client: ByteStream = await anyio.connect_tcp("127.0.0.1", port)
            else:
                client = await anyio.connect_unix(path)
            answers.append(await _upload(client))
        tg.cancel_scope.cancel()
    assert refused == [413] * TRIES
    assert all(a.startswith(b"HTTP/1.1 413 ") for a in answers), [a[:40] for a in answers]
