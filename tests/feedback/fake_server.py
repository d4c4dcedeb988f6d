"""A language server for the tests, speaking LSP on stdio in plain Python.

`hang`: reads and never answers. `spawn MARKER`: starts a detached (`setsid`) sleeper holding
MARKER, then answers as a well-behaved server that finds nothing wrong. `late`: answers, publishes nothing wrong on open, and publishes
one diagnostic ("L1 late problem") for a change only once the test writes to the FIFO `release`
in its working directory, then writes to the FIFO `published` (each blocks until the other end
opens: the test waits on them as events).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def read() -> dict[str, Any] | None:
    length = 0
    while (line := sys.stdin.buffer.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    if not length:
        return None
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length))
    return message


def send(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri: str, version: int, diagnostics: list[dict[str, Any]]) -> None:
    params = {"uri": uri, "version": version, "diagnostics": diagnostics}
    send({"method": "textDocument/publishDiagnostics", "params": params})


LATE = {
    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
    "severity": 1,
    "code": "L1",
    "source": "fake",
    "message": "late problem",
}


def main(mode: str, marker: str = "") -> None:
    if mode == "spawn":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", marker],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL)  # fmt: skip
    while (message := read()) is not None:
        method, params = message.get("method"), message.get("params") or {}
        if mode == "hang":
            continue
        if method == "initialize":
            send({"id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
        elif method == "shutdown":
            send({"id": message["id"], "result": None})
        elif method == "exit":
            return
        elif method == "textDocument/didOpen" or (
            method == "textDocument/didChange" and mode == "spawn"
        ):
            document = params["textDocument"]
            publish(document["uri"], document["version"], [])
        elif method == "textDocument/didChange":
            document = params["textDocument"]
            Path("release").read_text()
            publish(document["uri"], document["version"], [LATE])
            Path("published").write_text("yes")


if __name__ == "__main__":
    main(*sys.argv[1:])
