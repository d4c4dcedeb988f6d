"""The relay in the harness sandbox (`forward.py`) attacked as a program and a server would
use it: a request sent, then half-closed, must still get the whole answer; an answer the
server sends before it has read the whole request (a 413 for an oversized body), then
closes, must reach the program, whose send is not cut off either.

The relay runs as the sandbox runs it (`forward.py PORT=SOCKET -- PROGRAM`), here on the
host's loopback and under the supervisor, so nothing it forks outlives the test."""

from __future__ import annotations

import contextlib
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import DEVNULL, PIPE

import anyio
import pytest

import swarmflow.harnesses
from swarmflow.tools.supervisor import ended, start

FORWARD = Path(swarmflow.harnesses.__file__).with_name("forward.py")
ANSWER = b"A" * (3 << 20)
TOO_LARGE = b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n"
CLIENT = """
import socket, sys
port, size = int(sys.argv[1]), int(sys.argv[2])
with socket.create_connection(("127.0.0.1", port)) as conn:
    conn.sendall(b"q" * size)
    conn.shutdown(socket.SHUT_WR)
    got = bytearray()
    while chunk := conn.recv(65536):
        got += chunk
sys.stdout.write(f"{len(got)} {bytes(got[:12]).decode()}")
"""

Serve = Callable[[socket.socket], None]


def answer_after_the_whole_request(conn: socket.socket) -> None:
    """Read the request to its end (the client's half-close), then answer 3 MiB."""
    while conn.recv(65536):
        pass
    conn.sendall(ANSWER)


def refuse_before_reading_it_all(conn: socket.socket) -> None:
    """Read a little of the request, answer 413 and close with the rest unread."""
    conn.recv(1024)
    conn.sendall(TOO_LARGE)


@contextlib.contextmanager
def server(serve: Serve) -> Iterator[str]:
    """A Unix socket that answers one connection with `serve`; its path."""
    with tempfile.TemporaryDirectory(prefix="sf") as folder:
        path = str(Path(folder) / "s")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)

        def once() -> None:
            conn, _ = listener.accept()
            with conn:
                serve(conn)

        thread = threading.Thread(target=once, daemon=True)
        thread.start()
        try:
            yield path
        finally:
            listener.close()
            thread.join(timeout=30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def relayed(path: str, size: int) -> str:
    """What the program told after sending `size` bytes through the relay and half-closing."""
    port = free_port()
    program = [sys.executable, "-c", CLIENT, str(port), str(size)]
    argv = [sys.executable, "-I", "-S", str(FORWARD), f"{port}={path}", "--", *program]
    process = await start(
        argv, cwd=Path.cwd(), env={"PATH": "/usr/bin:/bin"}, stdin=DEVNULL, stdout=PIPE,
        stderr=PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        with anyio.fail_after(60):
            out = b"".join([chunk async for chunk in process.stdout])
            await process.wait()
    finally:
        await ended(process)
    return out.decode()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the relay runs on Linux")
async def test_a_half_closed_request_gets_the_whole_answer() -> None:
    with server(answer_after_the_whole_request) as path:
        told = await relayed(path, 100_000)
    assert told == f"{len(ANSWER)} AAAAAAAAAAAA"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the relay runs on Linux")
@pytest.mark.parametrize("attempt", range(5))
async def test_an_early_refusal_reaches_the_program_whole(attempt: int) -> None:
    with server(refuse_before_reading_it_all) as path:
        told = await relayed(path, 8 << 20)
    assert told == f"{len(TOO_LARGE)} HTTP/1.1 413"
