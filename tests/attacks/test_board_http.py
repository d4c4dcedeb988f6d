"""The board's HTTP server against hostile framing: a request whose Content-Length lies gets a
clear answer at once instead of holding a server thread."""

from __future__ import annotations

import socket
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
