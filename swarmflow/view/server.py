"""Serving the view on the loopback with uvicorn, in the foreground or in a thread (tests).

The server binds 127.0.0.1 only. Port 0 (the default) lets the system pick a free port; the
URL is known once the socket is bound, before the first request is taken.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from swarmflow.view.app import build_app

HOST = "127.0.0.1"


def bound_socket(port: int = 0) -> socket.socket:
    """A listening socket on the loopback at `port` (0: any free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}/"


def server_for(root: Path) -> uvicorn.Server:
    """A uvicorn server for the view of `root`, quiet but for errors."""
    config = uvicorn.Config(
        build_app(root), log_level="warning", access_log=False, lifespan="off", loop="asyncio"
    )
    return uvicorn.Server(config)


def serve(root: Path, sock: socket.socket) -> None:
    """Serve the view of `root` on `sock` until interrupted (Ctrl-C)."""
    server_for(root).run(sockets=[sock])


@contextmanager
def serving(root: Path) -> Iterator[str]:
    """The view of `root` served in a thread while the block runs; yields its URL."""
    sock = bound_socket()
    server = server_for(root)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


__all__ = ["HOST", "bound_socket", "serve", "serving", "url_of"]
