"""The board's HTTP server against hostile requests: every field of every request is checked
by its typed model and a bad one answered with one line of JSON naming it (400), wrong
framing gets a clear answer at once instead of holding a server thread, and nothing a client
sends prints a traceback on the run's terminal or stops the server."""

from __future__ import annotations

import http.client
import json
import socket
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from swarmflow import Agent, Team
from swarmflow.runtime.context import current_run
from swarmflow.teams.board import Board
from swarmflow.teams.http import read_address
from tests.teams.board_support import on_board

TEAM = Team([Agent("lead"), Agent("helper")], edges=[("lead", "helper")])


def _exchange(url: str, token: str, length: str) -> bytes:
    """One POST with the given Content-Length header and no body; the connection stays open
    (keep-alive), so a server that waits for a body never answers within the timeout."""
    parts = urlsplit(url)
    head = (
        f"POST /threads HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(head.encode())
        return conn.recv(65536)


@pytest.mark.parametrize("length", ["-1", "-99999"])
async def test_a_negative_content_length_is_a_bad_request(length: str) -> None:
    async def body(board: Board) -> Any:
        address = read_address(current_run().deps.run_dir)
        return await anyio.to_thread.run_sync(_exchange, address.url, address.token, length)

    result = await on_board(body, TEAM, board_port=0)
    assert result.status == "ok", result.error
    assert result.output.startswith(b"HTTP/1.1 400"), result.output[:200]
    assert b"Content-Length" in result.output


async def test_a_client_that_never_sends_its_body_does_not_hold_the_run_open() -> None:
    parts: list[socket.socket] = []

    async def body(board: Board) -> str:
        address = read_address(current_run().deps.run_dir)
        where = urlsplit(address.url)
        conn = socket.create_connection((where.hostname, where.port), timeout=10)
        parts.append(conn)
        conn.sendall(b"POST /threads HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{")  # and no more
        return "done"

    try:
        result = await on_board(body, TEAM, board_port=0)
    finally:
        for conn in parts:
            conn.close()
    assert result.status == "ok" and result.output == "done"


JSON = {"Content-Type": "application/json"}
Case = tuple[str, str, bytes, dict[str, str], int, str]


def _post(path: str, raw: bytes, status: int, field: str, headers: dict[str, str] = JSON) -> Case:
    """A POST of `raw`, answered `status` naming `field`."""
    return "POST", path, raw, headers, status, field


def _get(path: str, status: int, field: str) -> Case:
    return "GET", path, b"", {}, status, field


WAITS = ['"soon"', "null", "[1]", "{}", "NaN", "Infinity", "-Infinity", "1e400", "-5", "3601",
         "1e308", "true", '"60"']  # fmt: skip
NAMES = b",".join([b'"helper"'] * 100)
HOSTILE: list[Case] = [
    *(_post("/wait", b'{"as": "lead", "timeout": %s}' % t.encode(), 400, "timeout") for t in WAITS),
    _post("/wait", b'{"as": "lead", "timeout": 1' + b"0" * 5000 + b"}", 400, "body"),
    _post("/wait?timeout=soon", b'{"as": "lead"}', 400, "query"),
    _get("/board?as=lead&timeout=soon", 400, "timeout"),
    _get("/board?as=lead&as=helper", 400, "as"),
    _get("/board?as=%ff", 400, "query"),
    _get("/board", 400, "as"),
    _post("/threads", b'{"as": "lead"', 400, "body"),
    _post("/threads", b"[1, 2]", 400, "body"),
    _post("/threads", b"", 400, "body"),
    _post("/threads", b'{"name": "x"}', 400, "as"),
    _post("/threads", b'{"as": "lead", "name": "x", "colour": "red"}', 400, "colour"),
    _post("/threads", b'{"as": 5, "name": "x"}', 400, "as"),
    _post("/threads", b'{"as": "", "name": "x"}', 400, "as"),
    _post("/threads", b'{"as": "lead", "name": "%s"}' % (b"n" * 10_000), 400, "name"),
    _post("/threads", b'{"as": "lead", "name": "x", "participants": "x"}', 400, "participants"),
    _post(
        "/threads",
        b'{"as": "lead", "name": "x", "participants": [%s]}' % NAMES,
        400,
        "participants",
    ),
    _post("/threads", b'{"as": "lead", "name": "x", "board": 5}', 400, "board"),
    _post("/threads", b'{"as": "lead", "name": "x", "board": "team[9]"}', 404, "board"),
    _post(
        "/messages",
        b'{"as": "lead", "thread": "t", "content": "hi", "mentions": [1]}',
        400,
        "mentions.0",
    ),
    _post(
        "/messages",
        b'{"as": "lead", "thread": "t", "content": "%s"}' % (b"x" * 20_001),
        400,
        "content",
    ),
    _post("/messages", b'{"as": "\\ud800", "thread": "t", "content": "hi"}', 400, "body"),
    _post("/threads", b"[" * 50_000, 400, "body"),
    _post("/threads", b"\xff\xfe{}", 400, "body"),
    _post(
        "/threads",
        b'{"as": "lead", "name": "x"}',
        415,
        "Content-Type",
        {"Content-Type": "text/plain"},
    ),
    _post("/threads", b'{"as": "lead", "name": "x"}', 415, "Content-Type", {}),
    ("PUT", "/threads", b"{}", JSON, 501, ""),
    # Well-formed, so the board's own rules answer them: refusals, as for a tool call.
    _post("/threads", b'{"as": "lead\\u0000", "name": "x"}', 403, ""),
    _post("/threads", '{"as": "ｌｅａｄ", "name": "x"}'.encode(), 403, ""),
    _post("/threads", b'{"as": "lead", "name": "a\\u202eb"}', 403, ""),
]


def _ask(
    url: str, token: str, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, bytes]:
    """One request from a real HTTP client on a connection of its own."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=20)
    try:
        send = {"Authorization": f"Bearer {token}", **headers}
        conn.request(method, path, body=body if method != "GET" else None, headers=send)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


FRAMINGS = (
    "Transfer-Encoding: chunked",
    "Content-Length: 1e3",
    "Content-Length: 99999999999999999999999999",
)


def _framed(url: str, token: str, framing: str) -> bytes:
    """A POST whose framing headers are `framing`, then the first answer."""
    parts = urlsplit(url)
    head = (
        f"POST /threads HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(head.encode() + b'5\r\n{"as"\r\n0\r\n\r\n')
        return conn.recv(65536)


async def test_no_request_however_hostile_breaks_the_server(
    capfd: pytest.CaptureFixture[str],
) -> None:
    async def body(board: Board) -> Any:
        address = read_address(current_run().deps.run_dir)
        ask = partial(_ask, address.url, address.token)
        answers = [await anyio.to_thread.run_sync(ask, *case[:4]) for case in HOSTILE]
        framed = [
            await anyio.to_thread.run_sync(_framed, address.url, address.token, framing)
            for framing in FRAMINGS
        ]
        good = b'{"as": "lead", "name": "still here", "participants": ["helper"]}'
        after = await anyio.to_thread.run_sync(ask, "POST", "/threads", good, JSON)
        return answers, framed, after

    result = await on_board(body, TEAM, board_port=0)
    assert result.status == "ok", result.error
    answers, framed, after = result.output
    for (method, path, _, _, status, field), (got, raw) in zip(HOSTILE, answers, strict=True):
        assert raw.count(b"\n") == 0, raw  # one line of JSON
        answer = json.loads(raw)
        assert (got, answer["ok"]) == (status, False), (method, path, got, answer)
        assert answer["error"] and len(answer["error"]) < 500, answer
        assert answer.get("field", "") == field, (method, path, answer)
    assert [head.split(b"\r\n", 1)[0] for head in framed] == [
        b"HTTP/1.1 411 Length Required",
        b"HTTP/1.1 400 Bad Request",
        b"HTTP/1.1 413 Request Entity Too Large",
    ]
    assert after[0] == 200 and b"created thread #still here" in after[1]
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
    # A malformed request reached no board: only the board's own refusals are recorded, and
    # nothing was made but the last thread.
    assert len([e for e in result.events if e.type == "board_refused"]) == 3
    assert [e.thread for e in result.events if e.type == "thread_created"] == ["still here"]
