"""`swarmflow board`: serve a run's message board over HTTP, and take part in one from a shell.

    swarmflow board serve RUN_DIR [--port N]
    swarmflow board create-thread --url URL --as AGENT NAME [PARTICIPANT ...]
    swarmflow board send --url URL --as AGENT THREAD CONTENT [--mention AGENT ...]
    swarmflow board wait --url URL --as AGENT [--timeout SECONDS]
    swarmflow board show --url URL --as AGENT [--json]

The token comes from `--token`, else `SWARMFLOW_BOARD_TOKEN`, else the `board.json` of
`--run-dir RUN_DIR` (which also gives the URL). Exit status: 0 done, 1 refused by the board,
2 usage error or no board to talk to. The protocol is in `swarmflow.teams.http`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

OK, REFUSED, USAGE = 0, 1, 2
TOKEN_ENV = "SWARMFLOW_BOARD_TOKEN"
_SLACK = 30.0
"""Seconds the client waits beyond a `wait`'s own timeout before giving up on the server."""


def register(subparsers: Any) -> None:
    """Add `board` and its subcommands to the `swarmflow` command."""
    board = subparsers.add_parser("board", help="a run's message board over HTTP")
    sub = board.add_subparsers(dest="board_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser("serve", help="serve the board of a run directory on 127.0.0.1")
    serve.add_argument("run_dir", metavar="RUN_DIR")
    serve.add_argument("--port", type=int, default=0, help="the port (default 0: pick one)")
    serve.set_defaults(handler=serve_command)
    create = _client(sub, "create-thread", "open a thread")
    create.add_argument("name", metavar="NAME")
    create.add_argument("participants", nargs="*", metavar="PARTICIPANT")
    send = _client(sub, "send", "post a message to a thread")
    send.add_argument("thread", metavar="THREAD")
    send.add_argument("content", metavar="CONTENT", help="the message; - reads it from stdin")
    send.add_argument("--mention", action="append", default=[], metavar="AGENT")
    wait = _client(sub, "wait", "wait for a mention; prints it and the board")
    wait.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS")
    show = _client(sub, "show", "print the threads AGENT takes part in")
    show.add_argument("--json", action="store_true", help="the snapshot as JSON")


def _client(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the served board, e.g. http://127.0.0.1:8765")
    where.add_argument(
        "--run-dir", metavar="RUN_DIR", help="read URL and token from its board.json"
    )
    parser.add_argument("--as", dest="agent", required=True, metavar="AGENT")
    parser.add_argument("--token", help=f"the board's token (default: ${TOKEN_ENV})")
    parser.set_defaults(handler=client_command)
    return parser


# -- the client -------------------------------------------------------------------------------


def client_command(args: argparse.Namespace) -> int:
    """One request to a served board; prints its answer."""
    try:
        url, token = _where(args)
    except ValueError as exc:
        print(f"swarmflow board: {exc}", file=sys.stderr)
        return USAGE
    command = args.board_command
    try:
        if command == "show":
            answer = _request(f"{url}/board?as={_quote(args.agent)}", token, None, 30.0)
        else:
            path, body, timeout = _body(args)
            answer = _request(f"{url}{path}", token, body, timeout)
    except _Unreachable as exc:
        print(f"swarmflow board: {exc}", file=sys.stderr)
        return USAGE
    return _print(answer, as_json=getattr(args, "json", False))


def _body(args: argparse.Namespace) -> tuple[str, dict[str, Any], float]:
    agent = args.agent
    if args.board_command == "create-thread":
        body = {"as": agent, "name": args.name, "participants": args.participants}
        return "/threads", body, 30.0
    if args.board_command == "send":
        content = sys.stdin.read() if args.content == "-" else args.content
        body = {"as": agent, "thread": args.thread, "content": content, "mentions": args.mention}
        return "/messages", body, 30.0
    body = {"as": agent, "timeout": args.timeout}
    return "/wait", body, max(0.0, args.timeout) + _SLACK


def _where(args: argparse.Namespace) -> tuple[str, str]:
    """The board's URL and token from the options, the environment or the run directory."""
    url, token = args.url, args.token or os.environ.get(TOKEN_ENV)
    if args.run_dir:
        from swarmflow.core.errors import ConfigError
        from swarmflow.teams.http import read_address

        try:
            address = read_address(args.run_dir)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        url, token = address.url, token or address.token
    if not token:
        raise ValueError(f"no token: give --token, set {TOKEN_ENV} or use --run-dir")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--url {url!r} is not an http:// URL")
    return url.rstrip("/"), token


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


class _Unreachable(Exception):
    """No answer from a board (nothing listens, or it is not a swarmflow board)."""


def _request(url: str, token: str, body: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return _decoded(response.read())
    except urllib.error.HTTPError as error:
        return _decoded(error.read())
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _Unreachable(f"no board answers at {url}: {reason}") from None


def _decoded(raw: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Unreachable("the server did not answer as a swarmflow board") from None
    if not isinstance(answer, dict):
        raise _Unreachable("the server did not answer as a swarmflow board")
    return answer


def _print(answer: dict[str, Any], *, as_json: bool) -> int:
    if not answer.get("ok"):
        print(f"swarmflow board: {answer.get('error', 'refused')}", file=sys.stderr)
        return REFUSED
    if as_json:
        print(json.dumps(answer.get("snapshot", answer), indent=2, ensure_ascii=False))
    else:
        print(answer.get("text", ""))
    return OK


# -- serving a run directory's board ------------------------------------------------------------


def serve_command(args: argparse.Namespace) -> int:
    """Serve RUN_DIR's board until interrupted (Ctrl-C)."""
    import anyio

    from swarmflow.cli.flow_refs import load_flow_named
    from swarmflow.core.errors import ConfigError
    from swarmflow.runner.wiring import open_run_board

    try:
        board_run = open_run_board(args.run_dir, load_flow_named)
    except ConfigError as exc:
        print(f"swarmflow board serve: {exc}", file=sys.stderr)
        return USAGE
    try:
        anyio.run(_serve, board_run, args.port)
    except ConfigError as exc:
        print(f"swarmflow board serve: {exc}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:  # Ctrl-C is how a serving is meant to end: a normal exit
        print("board: stopped (Ctrl-C); the run directory is free again", file=sys.stderr)
    return OK


async def _serve(board_run: Any, port: int) -> None:
    import anyio

    from swarmflow.teams.http import serving_board

    async with board_run as ctx, serving_board(ctx, port) as address:
        announce(address.url, address.token, address.path)
        await anyio.sleep_forever()


def announce(url: str, token: str, path: Any) -> None:
    """Tell the person at the terminal where the board is (stdout: a script reads it)."""
    print(f"board: {url}", flush=True)
    print(f"token: {token} (also in {path}, mode 0600)", flush=True)


class BoardAnnouncer:
    """An event sink for `swarmflow run --board-port`: prints where the board is, on stderr,
    once it is served."""

    wants_objects = True
    event_types = frozenset({"board_served"})

    def write(self, event: Any, line: bytes) -> None:
        if event is None or getattr(event, "type", "") != "board_served":
            return
        from swarmflow.teams.http import read_address

        address = read_address(Path(event.address_file).parent)
        print(f"board: {address.url}", file=sys.stderr, flush=True)
        print(f"token: {address.token} (also in {address.path}, mode 0600)", file=sys.stderr,
              flush=True)  # fmt: skip

    def close(self) -> None:
        """Nothing to release."""
