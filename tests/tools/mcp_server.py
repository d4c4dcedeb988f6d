"""A real MCP server for the tests, written with the SDK's own server API.

`python mcp_server.py` serves over stdio; `python mcp_server.py http PORT` serves streamable
HTTP on 127.0.0.1:PORT.
"""

from __future__ import annotations

import os
import signal
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("swarmflow-test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def die() -> str:
    """Kills the server process in the middle of this call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
