"""A small bounded HTTP/1.1 server on the run's event loop (h11 over anyio listeners).

The metering endpoint is served with it, so each request runs on the run's loop, beside the
ledgers it charges. It is bounded against the program it serves:

- at most `max_connections` connections at once; one more is answered 503 and closed;
- a request body over `max_body` bytes is answered 413 (a declared `Content-Length` before
  any of the body is read) and the connection closed;
- a connection that sends nothing for `read_timeout` seconds, or takes longer than that to
  send one request, is closed;
- a malformed request is answered 400 and closed.

A refusal that closes the connection closes it lingering: the answer is sent (it says
`connection: close` and its length), and what the program still sends (the rest of a body too
large) is read and dropped until the program closes its side, for at most `read_timeout`
seconds and `LINGER_BYTES`. Closing at once, with the body still coming, resets the connection
(TCP) or ends the sandbox's relay mid-copy, and the answer already sent is lost on the way to
the program; so would shutting our side early, which the sandbox's relay takes for the end of
the exchange.

Each turn-away is reported to `on_refused(kind, reason, status)` (the endpoint records it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import anyio
import h11
from anyio.abc import ByteStream, SocketListener, TaskGroup

from swarmflow.harnesses.wire import error_body


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: a JSON body, or server-sent events when `events` is given."""

    status: int
    body: bytes = b""
    events: Iterable[bytes] | None = None
    headers: tuple[tuple[str, str], ...] = field(default=())


Handler = Callable[[HttpRequest], Awaitable[Reply]]
Refused = Callable[[str, str, int], None]
"""Told of each request turned away: its kind, the reason, the status answered."""


LINGER_BYTES = 64 << 20
"""The most a refused connection's rest is read (and dropped) before it is closed."""


@dataclass(frozen=True, slots=True)
class Bounds:
    max_body: int = 4 << 20
    max_connections: int = 32
    read_timeout: float = 30.0


def error_reply(status: int, message: str, kind: str, code: str) -> Reply:
    return Reply(status, error_body(message, kind, code))


class HttpServer:
    """Serves `handler` on listeners until its task group is cancelled."""

    def __init__(self, handler: Handler, bounds: Bounds, on_refused: Refused) -> None:
        self.handler, self.bounds, self.on_refused = handler, bounds, on_refused
        self.open = 0

    async def serve(self, listener: SocketListener, tg: TaskGroup) -> None:
        """Accept connections from `listener` until cancelled."""
        async with listener:
            while True:
                stream = await listener.accept()
                if self.open >= self.bounds.max_connections:
                    tg.start_soon(self._turn_away, stream)
                    continue
                self.open += 1
                tg.start_soon(self._connection, stream)

    async def _turn_away(self, stream: ByteStream) -> None:
        limit = self.bounds.max_connections
        self.on_refused("connections", f"more than {limit} connections at once", 503)
        conn = h11.Connection(h11.SERVER)
        reply = error_reply(
            503,
            f"too many connections (at most {limit} at once)",
            "server_error",
            "too_many_connections",
        )
        with anyio.move_on_after(1.0), contextlib.suppress(Exception):
            await _send_whole(stream, conn, reply, close=True)
        with contextlib.suppress(Exception):
            await stream.aclose()

    async def _connection(self, stream: ByteStream) -> None:
        try:
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
            while True:
                request = await self._read(stream, conn)
                if request is None:
                    return
                reply = await self.handler(request)
                await _send(stream, conn, reply)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return  # the program hung up: nobody to answer
        finally:
            self.open -= 1
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def _read(self, stream: ByteStream, conn: h11.Connection) -> HttpRequest | None:
        """The next whole request, or None when the connection is to close."""
        head: h11.Request | None = None
        body = bytearray()
        with anyio.move_on_after(self.bounds.read_timeout):
            while True:
                try:
                    event = conn.next_event()
                except h11.RemoteProtocolError as exc:
                    await self._refuse(
                        stream, conn, 400, "bad_request", f"malformed request: {exc}"
                    )
                    return None
                if event is h11.NEED_DATA:
                    try:
                        data = await stream.receive(65536)
                    except anyio.EndOfStream:
                        data = b""
                    conn.receive_data(data)
                elif isinstance(event, h11.Request):
                    head = event
                    if _declared_length(event) > self.bounds.max_body:
                        await self._too_large(stream, conn)
                        return None
                elif isinstance(event, h11.Data):
                    body += event.data
                    if len(body) > self.bounds.max_body:
                        await self._too_large(stream, conn)
                        return None
                elif isinstance(event, h11.EndOfMessage) and head is not None:
                    return _request(head, bytes(body))
                else:  # the connection closed
                    return None
        if head is not None or body:
            self.on_refused(
                "timeouts", f"a request took over {self.bounds.read_timeout:g}s to send", 408
            )
        return None

    async def _too_large(self, stream: ByteStream, conn: h11.Connection) -> None:
        limit = self.bounds.max_body
        await self._refuse(
            stream,
            conn,
            413,
            "body_too_large",
            f"the request body is over {limit} bytes (the endpoint's limit)",
        )

    async def _refuse(
        self, stream: ByteStream, conn: h11.Connection, status: int, code: str, message: str
    ) -> None:
        self.on_refused(code, message, status)
        reply = error_reply(status, message, "invalid_request_error", code)
        with contextlib.suppress(h11.LocalProtocolError):
            await _send_whole(stream, conn, reply, close=True)
        await _linger(stream, self.bounds.read_timeout)


async def _linger(stream: ByteStream, seconds: float) -> None:
    """Drop what the program still sends until it closes its side, for at most `seconds` and
    `LINGER_BYTES`: the answer sent reaches it before the close (our side is not shut
    first: the sandbox's relay would take that for the end of the exchange)."""
    with (
        anyio.move_on_after(seconds),
        contextlib.suppress(
            anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
        ),
    ):
        dropped = 0
        while dropped < LINGER_BYTES:
            dropped += len(await stream.receive(65536))


def _declared_length(head: h11.Request) -> int:
    for name, value in head.headers:
        if name == b"content-length":
            with contextlib.suppress(ValueError):
                return int(value)
    return 0


def _request(head: h11.Request, body: bytes) -> HttpRequest:
    headers = {n.decode("latin-1"): v.decode("latin-1") for n, v in head.headers}
    target = head.target.decode("latin-1").split("?", 1)[0]
    return HttpRequest(head.method.decode("latin-1"), target, headers, body)


async def _send(stream: ByteStream, conn: h11.Connection, reply: Reply) -> None:
    if reply.events is None:
        await _send_whole(stream, conn, reply, close=False)
        return
    headers = [("content-type", "text/event-stream"), ("cache-control", "no-cache"), *reply.headers]
    await stream.send(conn.send(h11.Response(status_code=reply.status, headers=headers)))
    for chunk in reply.events:
        await stream.send(conn.send(h11.Data(data=chunk)))
    await stream.send(conn.send(h11.EndOfMessage()))


async def _send_whole(
    stream: ByteStream, conn: h11.Connection, reply: Reply, *, close: bool
) -> None:
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(reply.body))),
        *reply.headers,
    ]
    if close:
        headers.append(("connection", "close"))
    data = conn.send(h11.Response(status_code=reply.status, headers=headers))
    data += conn.send(h11.Data(data=reply.body)) + conn.send(h11.EndOfMessage())
    await stream.send(data)


@contextlib.asynccontextmanager
async def serving(server: HttpServer, listeners: Iterable[SocketListener]) -> AsyncIterator[None]:
    """Serve on every listener while the block runs; every connection closes after it."""
    async with anyio.create_task_group() as tg:
        for listener in listeners:
            tg.start_soon(server.serve, listener, tg)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
