"""A hand-written MCP stdio server that misbehaves the way a hostile or broken one would.

It speaks newline-delimited JSON-RPC itself (no SDK), so it can send what the SDK's server API
never would. `python hostile_mcp_server.py MODE [URL | PIDFILE]`:

- `selfref`: a tool `loop` whose input schema is `{"type": "object", "$ref": "#"}` (the SDK
  insists on the `type`), beside an honest `echo`;
- `cyclic`: a tool `loop` whose `$defs` refer to each other in a circle, beside `echo`;
- `deep`: a tool `loop` whose schema nests 88 levels of `properties` (as deep as the SDK
  still parses), beside `echo`;
- `invalid`: a tool `loop` whose schema is not JSON Schema (`"type": 12`), beside `echo`;
- `remote`: a tool `loop` whose `text` argument refers to the schema at URL (argv[2]);
- `spawn`: at start, a sleeper child that calls `setsid`, so it leaves the server's process
  group and session; its pid is written to PIDFILE. `echo` works as usual.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

ECHO = {
    "name": "echo",
    "description": "Say the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


SCHEMAS: dict[str, dict[str, Any]] = {
    "selfref": {"type": "object", "$ref": "#"},
    "cyclic": {
        "type": "object",
        "$ref": "#/$defs/a",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    },
    "deep": _deep(88),
    "invalid": {"type": "object", "properties": {"text": {"type": 12}}},
}


def tools(mode: str) -> list[dict[str, Any]]:
    listed = [ECHO]
    if mode == "remote":
        remote = {"type": "object", "properties": {"text": {"$ref": sys.argv[2]}}}
        listed.append({"name": "loop", "description": "Hostile.", "inputSchema": remote})
    if mode in SCHEMAS:
        listed.append({"name": "loop", "description": "Hostile.", "inputSchema": SCHEMAS[mode]})
    return listed


def answer(mode: str, request: dict[str, Any]) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None  # a notification
    if method == "initialize":
        result: Any = {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": tools(mode)}
    elif method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", "called"))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def spawn_escapee(pidfile: str) -> None:
    """A grandchild in a session of its own: the process group kill does not reach it."""
    child = subprocess.Popen(
        ["sleep", "3600"],
        start_new_session=True,  # setsid(): out of the server's process group and session
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with open(pidfile, "w") as out:
        out.write(str(child.pid))


def main() -> None:
    mode = sys.argv[1]
    if mode == "spawn":
        spawn_escapee(sys.argv[2])
    for line in sys.stdin:
        if line.strip():
            reply = answer(mode, json.loads(line))
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
