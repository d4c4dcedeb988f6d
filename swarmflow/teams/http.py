"""The board over HTTP on loopback, so an agent in another harness takes part through a shell.

`serving_board(run, port)` serves the run's board on 127.0.0.1 while its block runs (a
`ThreadingHTTPServer` in a thread; each request runs on the run's event loop through an anyio
blocking portal, so the board sees it exactly as it sees a tool call). The protocol, JSON in
and out, every request carrying `Authorization: Bearer TOKEN`:

| request | body (JSON) |
|---|---|
| `POST /threads` | `{"as": AGENT, "name": ..., "participants": [...]}` |
| `POST /messages` | `{"as": AGENT, "thread": ..., "content": ..., "mentions": [...]}` |
| `POST /wait` | `{"as": AGENT, "timeout": SECONDS}`: answers when a mention came or time ran out |
| `GET /board?as=AGENT` | none: answers `{"ok": true, "snapshot": {...}, "text": ...}` |

The POST requests answer `{"ok": true, "text": ...}`, the text a tool call would return.

A refusal answers 403 with `{"ok": false, "error": "refused: ..."}`; a malformed request 400,
a wrong or missing token 401, a body over 1 MiB 413, a board that has closed 503.

The token is made per serving (random, 32 bytes), written with the URL to `RUN_DIR/board.json`
(mode 0600) and removed when the serving ends. It lets its holder act as any agent the team
declares; the board's topology checks apply to every request as to a tool call.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hmac
import inspect
import json
import os
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.from_thread import BlockingPortal

from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.record.events import BoardServed
from swarmflow.runtime.context import RunContext, Scope, running
from swarmflow.teams.board import Board, board_for

ADDRESS_FILE = "board.json"
"""Where a served board's URL and token are written, in the run directory."""
HOST = "127.0.0.1"
MAX_BODY = 1 << 20
MAX_PORT = 65_535


@dataclass(frozen=True, slots=True)
class BoardAddress:
    """Where a served board answers, and the token it wants."""

    url: str
    token: str
    path: Path
    """The `board.json` file holding both."""


class _Request(Exception):
    """A request the server answers with an error status."""

    def __init__(self, status: HTTPStatus, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


class _BoardHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    portal: BlockingPortal
    """Set before the server starts serving."""

    def __init__(self, port: int, run: RunContext, token: str) -> None:
        super().__init__((HOST, port), _Handler)
        self.run, self.token = run, token
        self.board: Board = board_for(run)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` on the run's event loop, as part of the run."""
        try:
            return self.portal.call(_within, self.run, fn, *args)
        except (RuntimeError, concurrent.futures.CancelledError) as exc:  # the run is ending
            raise _Request(HTTPStatus.SERVICE_UNAVAILABLE, "the board has closed") from exc


async def _within(run: RunContext, fn: Callable[..., Any], *args: Any) -> Any:
    with running(run, Scope("", run.state.ledger)):
        result = fn(*args)
        if inspect.isawaitable(result):
            result = await result
        run.deps.write_ahead()  # the answer leaves the process: what the call recorded is on disk
        return result


class _Handler(BaseHTTPRequestHandler):
    server: _BoardHTTPServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self._answer(self._post)

    def do_GET(self) -> None:
        self._answer(self._get)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the run's events record what the board did."""

    def _answer(self, handle: Callable[[], dict[str, Any]]) -> None:
        try:
            self._authorize()
            status, body = HTTPStatus.OK, {"ok": True, **handle()}
        except _Request as bad:
            status, body = bad.status, {"ok": False, "error": bad.error}
        except ToolError as refused:
            status, body = HTTPStatus.FORBIDDEN, {"ok": False, "error": refused.message}
        data = json.dumps(body).encode()
        self.send_response(status)
        if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:  # its body is left unread
            self.close_connection = True
            self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorize(self) -> None:
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.token}"
        if not hmac.compare_digest(given.encode(), expected.encode()):
            self._drain()
            raise _Request(HTTPStatus.UNAUTHORIZED, "missing or wrong token (Authorization)")

    def _drain(self) -> None:
        """Read an unwanted body, so the client is not cut off mid-send."""
        length = self._length()
        if 0 < length <= MAX_BODY:
            self.rfile.read(length)

    def _length(self) -> int:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _Request(HTTPStatus.BAD_REQUEST, "Content-Length is not a number") from None
        if length < 0:  # read(-n) would wait for the client to close: a held server thread
            self.close_connection = True
            raise _Request(HTTPStatus.BAD_REQUEST, "Content-Length is negative")
        return length

    def _post(self) -> dict[str, Any]:
        route = _ROUTES.get(urlsplit(self.path).path)
        if route is None:
            raise _Request(HTTPStatus.NOT_FOUND, f"no such endpoint {self.path[:100]!r}")
        body = self._json()
        agent = _field(body, "as", str)
        return {"text": route(self.server, agent, body)}

    def _get(self) -> dict[str, Any]:
        url = urlsplit(self.path)
        if url.path != "/board":
            raise _Request(HTTPStatus.NOT_FOUND, f"no such endpoint {self.path[:100]!r}")
        agent = (parse_qs(url.query).get("as") or [""])[0]
        board = self.server.board
        if not self.server.run.deps.team.has(agent):
            raise ToolError(f"refused: no agent named {agent[:40]!r} on this team")
        snapshot = self.server.call(board.snapshot, agent)
        from swarmflow.teams.board_view import render_snapshot

        return {"snapshot": snapshot.model_dump(), "text": render_snapshot(snapshot)}

    def _json(self) -> dict[str, Any]:
        length = self._length()
        if length > MAX_BODY:
            raise _Request(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY} bytes")
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _Request(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _Request(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
        return body


def _field(body: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    value = body.get(name, default)
    if value is ...:
        raise _Request(HTTPStatus.BAD_REQUEST, f"the body needs {name!r}")
    if value is not None and not isinstance(value, kind):
        raise _Request(HTTPStatus.BAD_REQUEST, f"{name!r} must be {kind.__name__}")
    return value


def _create(server: _BoardHTTPServer, agent: str, body: dict[str, Any]) -> str:
    name, participants = _field(body, "name", str), _field(body, "participants", list, [])
    return str(server.call(server.board.create_thread, agent, name, participants))


def _send(server: _BoardHTTPServer, agent: str, body: dict[str, Any]) -> str:
    thread, content = _field(body, "thread", str), _field(body, "content", str)
    mentions = _field(body, "mentions", list, [])
    return str(server.call(server.board.send_message, agent, thread, content, mentions))


def _wait(server: _BoardHTTPServer, agent: str, body: dict[str, Any]) -> str:
    timeout = _field(body, "timeout", (int, float), 60.0)  # type: ignore[arg-type]
    if timeout is None:
        raise _Request(HTTPStatus.BAD_REQUEST, "'timeout' must be a number of seconds")
    return str(server.call(server.board.wait_for_mention, agent, timeout))


_ROUTES: dict[str, Callable[[_BoardHTTPServer, str, dict[str, Any]], str]] = {
    "/threads": _create,
    "/messages": _send,
    "/wait": _wait,
}


@asynccontextmanager
async def serving_board(run: RunContext, port: int = 0) -> AsyncIterator[BoardAddress]:
    """Serve `run`'s board on 127.0.0.1:`port` (0 picks a free one) for the block's duration.

    Raises:
        ConfigError: the port is out of range or cannot be bound.
    """
    server = _bound(run, port)
    async with BlockingPortal() as portal:
        server.portal = portal
        thread = threading.Thread(target=server.serve_forever, name="swarmflow-board", daemon=True)
        thread.start()
        address = _publish(
            run.deps.run_dir, f"http://{HOST}:{server.server_address[1]}", server.token
        )
        try:
            yield address
        finally:
            with anyio.CancelScope(shield=True):
                await portal.stop(cancel_remaining=True)  # pending waits answer 503
                await anyio.to_thread.run_sync(server.shutdown)
                server.server_close()
                with contextlib.suppress(FileNotFoundError):
                    address.path.unlink()


def _bound(run: RunContext, port: int) -> _BoardHTTPServer:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise ConfigError(f"cannot serve the board on port {port!r}: give 0 to {MAX_PORT}")
    try:
        # hex, not urlsafe: a token starting with "-" would be read by argparse as an option
        return _BoardHTTPServer(port, run, secrets.token_hex(32))
    except OSError as exc:
        raise ConfigError(f"cannot serve the board on {HOST}:{port}: {exc.strerror}") from None


@asynccontextmanager
async def served_board(run: RunContext, port: int) -> AsyncIterator[BoardAddress]:
    """`serving_board`, recorded as a `board_served` event (`run(..., board_port=)`)."""
    async with serving_board(run, port) as address:
        run.deps.log.emit(BoardServed, url=address.url, address_file=str(address.path))
        yield address


def _publish(run_dir: Path, url: str, token: str) -> BoardAddress:
    """Write the URL and token to `board.json`, readable by its owner only."""
    path = run_dir / ADDRESS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older file may have had looser bits
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": url, "token": token}, fh)
    return BoardAddress(url, token, path)


def read_address(run_dir: str | Path) -> BoardAddress:
    """The URL and token of the board a run directory serves now."""
    path = Path(run_dir) / ADDRESS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return BoardAddress(str(data["url"]), str(data["token"]), path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: no served board here ({exc})") from None
