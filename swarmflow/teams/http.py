"""The board over HTTP on loopback, so an agent in another harness takes part through a shell.

`serving_board(run, port)` serves the run's boards on 127.0.0.1 while its block runs (a
`ThreadingHTTPServer` in a thread; each request runs on the run's event loop through an anyio
blocking portal, so a board sees it exactly as it sees a tool call). The protocol, JSON in
and out, every request carrying `Authorization: Bearer TOKEN`:

| request | body (JSON) |
|---|---|
| `POST /threads` | `{"as": AGENT, "name": ..., "participants": [...]}` |
| `POST /messages` | `{"as": AGENT, "thread": ..., "content": ..., "mentions": [...]}` |
| `POST /wait` | `{"as": AGENT, "timeout": SECONDS}`: answers when a mention came or time ran out |
| `GET /board?as=AGENT` | none: answers `{"ok": true, "snapshot": {...}, "text": ...}` |
| `GET /boards` | none: answers `{"ok": true, "boards": [...], "default": NAME}` |

Every request may name its board (`"board": NAME` in the body, `&board=NAME` in the query):
"" is the run's own, `team[0]` a team call's (`teams.board.RunBoards`); one that names none
is for the latest team call's board, or the run's when no team has run. The POST requests
answer `{"ok": true, "text": ..., "board": NAME}`, the text a tool call would return.

Every field is checked by the endpoint's typed model (`teams.board_requests`) before anything
reaches the board. A malformed request answers 400 with `{"ok": false, "error": ...,
"field": ...}`; a refusal by the board, or a token bound to another agent, 403; a wrong or
missing token 401; an unknown path or board 404; a body that is not `application/json` 415; a
body over 1 MiB 413; a board that has closed 503. Every answer is one line of JSON, and no
request prints a traceback or stops the server: a client that hangs up is let go quietly.

Tokens (`teams.board_tokens`): each serving makes an owner token, written with the URL to
`RUN_DIR/board.json` (mode 0600) and removed when the serving ends, which may act as any agent;
and a token per declared agent, derived from it, which may act as that agent only. Every one of
them is given to the run's secret redactor as it is made, so none reaches `events.jsonl` or
`journal.jsonl`, whatever an agent repeats.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import inspect
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.from_thread import BlockingPortal

from swarmflow.core.errors import ConfigError, ToolError
from swarmflow.record.events import BoardServed
from swarmflow.runtime.context import RunContext, Scope, running
from swarmflow.teams.board import Board, RunBoards, boards_of
from swarmflow.teams.board_requests import (
    BadRequest,
    BoardQuery,
    MessageRequest,
    ThreadRequest,
    WaitRequest,
    parse_body,
    parse_query,
)
from swarmflow.teams.board_tokens import OWNER, BoardKeys, NotAToken, agent_token
from swarmflow.teams.board_view import BoardSnapshot, render_snapshot

__all__ = ["ADDRESS_FILE", "BoardAddress", "agent_token", "read_address", "serving_board"]

ADDRESS_FILE = "board.json"
"""Where a served board's URL and owner token are written, in the run directory."""
HOST = "127.0.0.1"
MAX_BODY = 1 << 20
MAX_PORT = 65_535
READ_TIMEOUT = 60.0
"""Seconds a connection may stall while it sends its request (a wait's own time is apart)."""
_JSON = "application/json"


@dataclass(frozen=True, slots=True)
class BoardAddress:
    """Where a served board answers, and the owner's token."""

    url: str
    token: str
    path: Path
    """The `board.json` file holding both."""
    agents: tuple[str, ...] = ()
    """The agents that have a token of their own (`agent_token(token, agent)`)."""


class _Answer(Exception):
    """A request the server answers with an error status."""

    def __init__(self, status: HTTPStatus, error: str, field: str = "") -> None:
        super().__init__(error)
        self.status, self.error, self.field = status, error, field

    def body(self) -> dict[str, object]:
        extra = {"field": self.field} if self.field else {}
        return {"ok": False, "error": self.error, **extra}


class _Gone(ConnectionError):
    """The client's connection failed while its request was read: nobody to answer."""


class _BoardHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    portal: BlockingPortal
    """Set before the server starts serving."""

    def __init__(self, port: int, run: RunContext, keys: BoardKeys) -> None:
        super().__init__((HOST, port), _Handler)
        self.run, self.keys = run, keys
        self.boards: RunBoards = boards_of(run)

    def handle_error(self, request: object, client_address: object) -> None:
        """What a request left unanswered: a client that hung up or stalled (a Ctrl-C'd
        `swarmflow board wait`, a script that stopped reading) is let go quietly; anything
        else is said in one line. Never a traceback on the run's terminal."""
        error = sys.exc_info()[1]
        if error is None or isinstance(error, OSError):
            return
        print(f"swarmflow board: a request failed: {_one_line(error)}", file=sys.stderr)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` on the run's event loop, as part of the run."""
        try:
            return self.portal.call(_within, self.run, fn, *args)
        except (RuntimeError, concurrent.futures.CancelledError) as exc:  # the run is ending
            raise _Answer(HTTPStatus.SERVICE_UNAVAILABLE, "the board has closed") from exc


async def _within(run: RunContext, fn: Callable[..., Any], *args: Any) -> Any:
    with running(run, Scope("", run.state.ledger)):
        try:
            result = fn(*args)
            if inspect.isawaitable(result):
                result = await result
            return result
        finally:  # the answer leaves the process: what the call recorded (a refusal too) is on disk
            run.deps.write_ahead()


class _Handler(BaseHTTPRequestHandler):
    server: _BoardHTTPServer
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    """A buffered `wfile`: an answer leaves in one send when the request is done, its head and
    body together, so a client that reads the head and hangs up has the body already."""
    timeout = READ_TIMEOUT
    _body_read = False

    def do_POST(self) -> None:
        self._answer(self._post)

    def do_GET(self) -> None:
        self._answer(self._get)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the run's events record what the board did."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What the standard server refuses itself (a malformed request line or header, a
        method the board has not), answered as every other error: one line of JSON."""
        status = HTTPStatus(code)
        self.close_connection = True
        self._send(status, {"ok": False, "error": message or status.phrase})

    # -- answering ---------------------------------------------------------------------------

    def _answer(self, handle: Callable[[str | None], dict[str, object]]) -> None:
        self._body_read = False
        status, body = self._outcome(handle)
        if not self._body_read:
            self._drain()
        self._send(status, body)

    def _outcome(
        self, handle: Callable[[str | None], dict[str, object]]
    ) -> tuple[HTTPStatus, dict[str, object]]:
        """The status and the JSON body that answer the request."""
        try:
            return HTTPStatus.OK, {"ok": True, **handle(self._bearer())}
        except _Answer as bad:
            return bad.status, bad.body()
        except BadRequest as bad:
            return HTTPStatus.BAD_REQUEST, {"ok": False, "error": bad.error, "field": bad.field}
        except ToolError as refused:
            return HTTPStatus.FORBIDDEN, {"ok": False, "error": refused.message}
        except _Gone:  # nobody to answer: let go quietly (handle_error)
            raise
        except Exception as exc:  # a fault of the board's own: one line, the server goes on
            said = _one_line(exc)
            print(f"swarmflow board: {self.command} {self.path[:100]!r}: {said}", file=sys.stderr)
            return HTTPStatus.INTERNAL_SERVER_ERROR, {
                "ok": False,
                "error": f"the board failed: {said}",
            }

    def _send(self, status: HTTPStatus, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()  # ASCII, one line: every character escaped that must be
        self.send_response(status)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.send_header("Content-Type", _JSON)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # -- the request -------------------------------------------------------------------------

    def _bearer(self) -> str | None:
        """The agent the token is bound to, or `OWNER`; 401 for no token of this serving."""
        try:
            return self.server.keys.bearer(self.headers.get("Authorization", ""))
        except NotAToken:
            raise _Answer(
                HTTPStatus.UNAUTHORIZED, "missing or wrong token (Authorization)", "Authorization"
            ) from None

    def _post(self, bearer: str | None) -> dict[str, object]:
        url = urlsplit(self.path)
        route = _POSTS.get(url.path)
        if route is None:
            raise _Answer(HTTPStatus.NOT_FOUND, f"no such endpoint {self.path[:100]!r}")
        if url.query:
            raise BadRequest(
                "query", f"POST {url.path} takes no query string: every field goes in the JSON body"
            )
        model, act = route
        request = parse_body(model, self._body())
        _check_bearer(bearer, request.agent)
        board, text = self.server.call(_on_board, self.server.boards, request, act)
        return {"text": str(text), "board": board}

    def _get(self, bearer: str | None) -> dict[str, object]:
        url = urlsplit(self.path)
        if url.path == "/boards":
            if url.query:
                raise BadRequest("query", "GET /boards takes no query string")
            return dict(self.server.call(_listing, self.server.boards))
        if url.path != "/board":
            raise _Answer(HTTPStatus.NOT_FOUND, f"no such endpoint {self.path[:100]!r}")
        query = parse_query(BoardQuery, url.query)
        _check_bearer(bearer, query.agent)
        board, snapshot = self.server.call(_on_board, self.server.boards, query, _snapshot)
        return {
            "snapshot": snapshot.model_dump(),
            "text": render_snapshot(snapshot),
            "board": board,
        }

    def _body(self) -> bytes:
        """The POST's body: JSON, at most `MAX_BODY` bytes, all of it within the timeout."""
        kind = self.headers.get("Content-Type")
        if kind is None or self.headers.get_content_type() != _JSON:
            raise _Answer(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"send the body as {_JSON} (got {str(kind)[:60]!r})",
                "Content-Type",
            )
        length = self._length()
        if length > MAX_BODY:
            raise _Answer(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY} bytes", "Content-Length"
            )
        self._body_read = True
        try:
            raw = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise _Answer(HTTPStatus.REQUEST_TIMEOUT, "the body did not arrive in time") from None
        except OSError as exc:
            raise _Gone(str(exc)) from exc
        if len(raw) < length:  # the client closed its side before sending all it announced
            self.close_connection = True
            raise _Answer(
                HTTPStatus.BAD_REQUEST,
                "the body is shorter than its Content-Length",
                "Content-Length",
            )
        return raw

    def _length(self) -> int:
        if self.headers.get("Transfer-Encoding"):  # its body would be read as the next request
            self.close_connection = True
            raise _Answer(
                HTTPStatus.LENGTH_REQUIRED,
                "send the body with a Content-Length, not in chunks",
                "Transfer-Encoding",
            )
        given = self.headers.get("Content-Length") or "0"
        try:
            length = int(given)
        except ValueError:
            self.close_connection = True
            raise _Answer(
                HTTPStatus.BAD_REQUEST, "Content-Length is not a number", "Content-Length"
            ) from None
        if length < 0:  # read(-n) would wait for the client to close: a held server thread
            self.close_connection = True
            raise _Answer(HTTPStatus.BAD_REQUEST, "Content-Length is negative", "Content-Length")
        return length

    def _drain(self) -> None:
        """Read a body left unread by an error, so the client is not cut off mid-send; one
        too large or malformed to read ends the connection instead."""
        if self.close_connection:
            return
        try:
            length = self._length()
        except _Answer:
            return
        if length > MAX_BODY:
            self.close_connection = True
            return
        try:
            if length:
                self.rfile.read(length)
        except OSError:
            self.close_connection = True


def _check_bearer(bearer: str | None, agent: str) -> None:
    """A token bound to one agent acts as that agent only (403)."""
    if bearer is not OWNER and bearer != agent:
        raise _Answer(
            HTTPStatus.FORBIDDEN,
            f"refused: this token is {bearer}'s; it cannot act as {agent[:40]!r}",
            "as",
        )


async def _on_board(boards: RunBoards, request: Any, act: Callable[..., Any]) -> tuple[str, Any]:
    """`act(board, request)` on the board the request names (on the run's loop)."""
    board = boards.named(request.board)
    if board is None:
        names = ", ".join(repr(name) for name in boards.boards)
        raise _Answer(
            HTTPStatus.NOT_FOUND,
            f"no board named {request.board[:40]!r} in this run (boards: {names})",
            "board",
        )
    result = act(board, request)
    if inspect.isawaitable(result):
        result = await result
    return board.name, result


def _create(board: Board, request: ThreadRequest) -> str:
    return board.create_thread(request.agent, request.name, request.participants)


def _send(board: Board, request: MessageRequest) -> str:
    return board.send_message(request.agent, request.thread, request.content, request.mentions)


async def _wait(board: Board, request: WaitRequest) -> str:
    return await board.wait_for_mention(request.agent, request.timeout)


def _snapshot(board: Board, request: BoardQuery) -> BoardSnapshot:
    if not board.run.deps.team.has(request.agent):
        raise ToolError(f"refused: no agent named {request.agent[:40]!r} on this team")
    return board.snapshot(request.agent)


def _listing(boards: RunBoards) -> dict[str, object]:
    return {"boards": list(boards.boards), "default": boards.latest}


_POSTS: dict[str, tuple[type[Any], Callable[..., Any]]] = {
    "/threads": (ThreadRequest, _create),
    "/messages": (MessageRequest, _send),
    "/wait": (WaitRequest, _wait),
}


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# -- serving --------------------------------------------------------------------------------------


@asynccontextmanager
async def serving_board(
    run: RunContext, port: int = 0, *, publish: bool = True
) -> AsyncIterator[BoardAddress]:
    """Serve `run`'s boards on 127.0.0.1:`port` (0 picks a free one) for the block's duration.

    `publish=False` writes no `board.json`: a serving of the run's own for one harness agent,
    which is handed that agent's token alone (`swarmflow.harnesses`).

    Raises:
        ConfigError: the port is out of range or cannot be bound.
    """
    server = _bound(run, port)
    async with BlockingPortal() as portal:
        server.portal = portal
        thread = threading.Thread(target=server.serve_forever, name="swarmflow-board", daemon=True)
        thread.start()
        url = f"http://{HOST}:{server.server_address[1]}"
        if publish:
            address = _publish(run.deps.run_dir, url, server.keys)
        else:
            address = BoardAddress(url, server.keys.owner, Path(), tuple(server.keys.agents))
        try:
            yield address
        finally:
            with anyio.CancelScope(shield=True):
                await portal.stop(cancel_remaining=True)  # pending waits answer 503
                await anyio.to_thread.run_sync(server.shutdown)
                server.server_close()
                if publish:
                    with contextlib.suppress(FileNotFoundError):
                        address.path.unlink()


def _bound(run: RunContext, port: int) -> _BoardHTTPServer:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise ConfigError(f"cannot serve the board on port {port!r}: give 0 to {MAX_PORT}")
    keys = BoardKeys.made(run.deps.team.names)
    for token in keys.all():  # before any is written anywhere: the log and journal scrub it
        run.deps.log.redactor.add(token)
    try:
        return _BoardHTTPServer(port, run, keys)
    except OSError as exc:
        raise ConfigError(f"cannot serve the board on {HOST}:{port}: {exc.strerror}") from None


@asynccontextmanager
async def served_board(run: RunContext, port: int) -> AsyncIterator[BoardAddress]:
    """`serving_board`, recorded as a `board_served` event (`run(..., board_port=)`)."""
    async with serving_board(run, port) as address:
        run.deps.log.emit(BoardServed, url=address.url, address_file=str(address.path))
        yield address


def _publish(run_dir: Path, url: str, keys: BoardKeys) -> BoardAddress:
    """Write the URL, the owner token and the agents' names to `board.json`, readable by its
    owner only."""
    path = run_dir / ADDRESS_FILE
    agents = tuple(keys.agents)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older file may have had looser bits
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": url, "token": keys.owner, "agents": list(agents)}, fh)
    return BoardAddress(url, keys.owner, path, agents)


def read_address(run_dir: str | Path) -> BoardAddress:
    """The URL and owner token of the board a run directory serves now."""
    path = Path(run_dir) / ADDRESS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        agents = tuple(str(name) for name in data.get("agents", ()))
        return BoardAddress(str(data["url"]), str(data["token"]), path, agents)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: no served board here ({exc})") from None
