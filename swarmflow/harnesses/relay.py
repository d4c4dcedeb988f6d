"""The board's way into the sandbox: a Unix socket relayed to the board's loopback port.

The board is served over HTTP on the host's 127.0.0.1 (`teams.http`), which a sandbox with
its network unshared cannot reach; this relay listens on a Unix socket in the harness call's
private folder and copies each connection to that port, at most `MAX_CONNECTIONS` at once (a
connection past them is closed at once).

The exchange ends when the answer does: a client that stops sending (or whose request the
board refused mid-body, breaking the upload) leaves the answer already sent to reach it in
full, then both sides close. Closing both at the first side's end lost such an answer.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
from anyio.abc import ByteStream, TaskGroup

MAX_CONNECTIONS = 16


async def relay_unix_to_tcp(path: Path, port: int, tg: TaskGroup, listening: anyio.Event) -> None:
    """Serve the relay until the task group is cancelled (`listening` is set once it listens)."""
    listener = await anyio.create_unix_listener(path)
    listening.set()
    open_now = 0

    async def one(client: ByteStream) -> None:
        nonlocal open_now
        try:
            with contextlib.suppress(OSError):  # a side that went away ends the pair
                upstream = await anyio.connect_tcp("127.0.0.1", port)
                async with client, upstream, anyio.create_task_group() as pair:
                    pair.start_soon(_request, client, upstream)
                    pair.start_soon(_answer, upstream, client, pair)
        finally:
            open_now -= 1

    async with listener:
        while True:
            client = await listener.accept()
            if open_now >= MAX_CONNECTIONS:
                await client.aclose()
                continue
            open_now += 1
            tg.start_soon(one, client)


_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


async def _copy(source: ByteStream, sink: ByteStream) -> None:
    with contextlib.suppress(*_GONE):
        while True:
            await sink.send(await source.receive())


async def _request(client: ByteStream, upstream: ByteStream) -> None:
    """The client's bytes to the board; when they end (or the board stops taking them), the
    board is told no more comes, and the answer goes on."""
    await _copy(client, upstream)
    with contextlib.suppress(*_GONE):
        await upstream.send_eof()


async def _answer(upstream: ByteStream, client: ByteStream, pair: TaskGroup) -> None:
    """The board's answer to the client, whole; then the exchange is over."""
    await _copy(upstream, client)
    pair.cancel_scope.cancel()
