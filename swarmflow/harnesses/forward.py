"""Inside the harness sandbox: the run's endpoints on the sandbox's own loopback, then the program.

`python -I -S forward.py --env FILE PORT=SOCKET [PORT=SOCKET ...] -- PROGRAM [ARG...]` reads
the variables in FILE (a JSON object: the endpoint's key, the board's token) into the
program's environment and removes the file, so no command line holds them; it listens on
127.0.0.1:PORT of the sandbox's network namespace (which has no other network) and relays
each connection to the Unix socket SOCKET, which the run serves from outside the sandbox;
then it runs PROGRAM in its place. The listeners are bound before PROGRAM starts, so its
first request finds them. The relay is one process with one thread (a selector loop): a
program that opens many connections costs sockets, not threads. It ends with the sandbox.

Standard library only: it runs with `-I -S`, outside any environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import sys

CHUNK = 65536


def _listen(spec: str) -> tuple[socket.socket, str]:
    port, _, path = spec.partition("=")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(port)))
    server.listen(512)
    server.setblocking(False)
    return server, path


class _Relay:
    """Copies bytes between connected sockets, each direction on its own (a half-close).

    A side that ends its sending (EOF) has its peer's sending side shut
    (`shutdown(SHUT_WR)`), and the other direction goes on until it ends too: a program that
    sends its request, then half-closes, still receives the whole answer. A side whose peer
    can no longer take its bytes (the server answered, a 413, and closed) is still read,
    what it sends dropped, so the answer already on its way reaches it (a side that resets
    counts as ended). The pair is closed when both directions have ended.
    """

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.peer: dict[socket.socket, socket.socket] = {}
        self.ended: set[socket.socket] = set()
        """Sides that have sent all they will send (EOF read)."""
        self.unwanted: set[socket.socket] = set()
        """Sides whose peer stopped reading: what they send is dropped."""

    def accept(self, server: socket.socket, path: str) -> None:
        try:
            client, _ = server.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            return
        for sock in (client, upstream):
            sock.setblocking(True)  # sends block briefly instead of being buffered here
            self.selector.register(sock, selectors.EVENT_READ, "data")
        self.peer[client], self.peer[upstream] = upstream, client

    def pump(self, sock: socket.socket) -> None:
        other = self.peer.get(sock)
        if other is None:
            return
        try:
            data = sock.recv(CHUNK)
        except OSError:
            # It reset: nothing more comes from it, and it takes nothing more; its peer is
            # still drained until it ends, so that it reads what already reached it.
            self.unwanted.add(other)
            data = b""
        if not data:
            self.end(sock, other)
        elif sock not in self.unwanted:
            try:
                other.sendall(data)
            except OSError:  # the peer stopped reading; its answer may still be coming
                self.unwanted.add(sock)

    def end(self, sock: socket.socket, other: socket.socket) -> None:
        """`sock` sent all it will: tell its peer (half-close), close when both have."""
        self.ended.add(sock)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(sock)
        with contextlib.suppress(OSError):
            other.shutdown(socket.SHUT_WR)
        if other in self.ended:
            self.close(sock)

    def close(self, sock: socket.socket) -> None:
        other = self.peer.pop(sock, None)
        for each in (sock, other):
            if each is None:
                continue
            self.peer.pop(each, None)
            self.ended.discard(each)
            self.unwanted.discard(each)
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(each)
            each.close()

    def run(self, servers: list[tuple[socket.socket, str]]) -> None:
        for server, path in servers:
            self.selector.register(server, selectors.EVENT_READ, path)
        while True:
            for key, _ in self.selector.select():
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if key.data == "data":
                    self.pump(sock)
                else:
                    self.accept(sock, key.data)


def _handed(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8") as fh:
        given = json.load(fh)
    os.unlink(path)
    return {str(k): str(v) for k, v in given.items()}


def main(argv: list[str]) -> int:
    if "--" not in argv:
        os.write(2, b"usage: forward.py PORT=SOCKET ... -- PROGRAM [ARG...]\n")
        return 2
    cut = argv.index("--")
    specs, program = argv[:cut], argv[cut + 1 :]
    if specs[:1] == ["--env"] and len(specs) > 1:
        os.environ.update(_handed(specs[1]))
        specs = specs[2:]
    if not program:
        os.write(2, b"forward.py: no program to run\n")
        return 2
    servers = [_listen(spec) for spec in specs]
    if os.fork() == 0:  # the relay: its own process, gone when the sandbox ends
        os.setsid()
        _Relay().run(servers)
        os._exit(0)
    for server, _ in servers:
        server.close()
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        os.write(2, f"cannot run {program[0]}: {exc.strerror}\n".encode())
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
