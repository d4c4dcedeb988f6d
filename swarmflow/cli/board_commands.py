"""`swarmflow board`: serve a run's message board over HTTP, and take part in one from a shell.

    swarmflow board serve RUN_DIR [--port N]
    swarmflow board token --run-dir RUN_DIR --as AGENT
    swarmflow board create-thread --url URL --as AGENT NAME [PARTICIPANT ...]
    swarmflow board send --url URL --as AGENT THREAD CONTENT [--mention AGENT ...]
    swarmflow board wait --url URL --as AGENT [--timeout SECONDS]
    swarmflow board show --url URL --as AGENT [--json]

The token comes from `--token`, else `SWARMFLOW_BOARD_TOKEN`, else `--run-dir RUN_DIR`: the
token of AGENT derived from the owner token in its `board.json` (which also gives the URL).
`swarmflow board token` prints AGENT's own token, to hand to a harness that acts as AGENT and
no other. `--board NAME` picks a team call's board (default: the latest). Exit status: 0 done,
1 refused by the board, 2 usage error or no board to talk to. The protocol is in
`swarmflow.teams.http`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import urllib.error
import urllib.request
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmflow.cli.exit_status import OK, USAGE
from swarmflow.cli.exit_status import PROBLEMS as REFUSED

if TYPE_CHECKING:
    from pydantic import JsonValue

    from swarmflow.runtime.context import RunContext
    from swarmflow.teams.http import BoardAddress

TOKEN_ENV = "SWARMFLOW_BOARD_TOKEN"
_SLACK = 30.0
"""Seconds the client waits beyond a `wait`'s own timeout before giving up on the server."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `board` and its subcommands to the `swarmflow` command."""
    board = subparsers.add_parser("board", help="a run's message board over HTTP")
    sub = board.add_subparsers(dest="board_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser("serve", help="serve the board of a run directory on 127.0.0.1")
    serve.add_argument("run_dir", metavar="RUN_DIR")
    serve.add_argument("--port", type=int, default=0, help="the port (default 0: pick one)")
    serve.set_defaults(handler=serve_command)
    token = sub.add_parser("token", help="print an agent's own token for a served board")
    token.add_argument("--run-dir", metavar="RUN_DIR", required=True)
    token.add_argument("--as", dest="agent", required=True, metavar="AGENT")
    token.set_defaults(handler=token_command)
    create = _client(sub, "create-thread", "open a thread")
    create.add_argument("name", metavar="NAME")
    create.add_argument("participants", nargs="*", metavar="PARTICIPANT")
    send = _client(sub, "send", "post a message to a thread")
    send.add_argument("thread", metavar="THREAD")
    send.add_argument("content", metavar="CONTENT", help="the message; - reads it from stdin")
    send.add_argument("--mention", action="append", default=[], metavar="AGENT")
    wait = _client(sub, "wait", "wait for a mention; prints it and the board")
    wait.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS")
    show = _client(sub, "show", "print the threads AGENT takes part in")
    show.add_argument("--json", action="store_true", help="the snapshot as JSON")


def _client(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the served board, e.g. http://127.0.0.1:8765")
    where.add_argument(
        "--run-dir", metavar="RUN_DIR", help="read URL and token from its board.json"
    )
    parser.add_argument("--as", dest="agent", required=True, metavar="AGENT")
    parser.add_argument("--token", help=f"the board's token (default: ${TOKEN_ENV})")
    parser.add_argument(
        "--board", metavar="NAME", help="a team call's board, e.g. team[0] ('' the run's own)"
    )
    parser.set_defaults(handler=client_command)
    return parser


def _seconds(text: str) -> float:
    """`--timeout`: a finite number of seconds from 0 to the board's longest wait."""
    from swarmflow.teams.board_rules import MAX_WAIT

    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_WAIT:
        raise argparse.ArgumentTypeError(f"give 0 to {MAX_WAIT:.0f} seconds, not {text!r}")
    return seconds


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
            status, answer = _request(f"{url}/board?{_query(args)}", token, None, 30.0)
        else:
            path, body, timeout = _body(args)
            status, answer = _request(f"{url}{path}", token, body, timeout)
    except _Unreachable as exc:
        print(f"swarmflow board: {exc}", file=sys.stderr)
        return USAGE
    return _print(status, answer, as_json=getattr(args, "json", False))


def _body(args: argparse.Namespace) -> tuple[str, dict[str, object], float]:
    said: dict[str, object] = {"as": args.agent}
    if args.board is not None:
        said["board"] = args.board
    if args.board_command == "create-thread":
        body = {**said, "name": args.name, "participants": args.participants}
        return "/threads", body, 30.0
    if args.board_command == "send":
        content = sys.stdin.read() if args.content == "-" else args.content
        body = {**said, "thread": args.thread, "content": content, "mentions": args.mention}
        return "/messages", body, 30.0
    return "/wait", {**said, "timeout": args.timeout}, args.timeout + _SLACK


def _query(args: argparse.Namespace) -> str:
    from urllib.parse import urlencode

    fields = {"as": args.agent} if args.board is None else {"as": args.agent, "board": args.board}
    return urlencode(fields)


def _address(run_dir: str) -> BoardAddress:
    """The `BoardAddress` that `run_dir`'s `board.json` holds (ValueError: none)."""
    from swarmflow.core.errors import ConfigError
    from swarmflow.teams.http import read_address

    try:
        return read_address(run_dir)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _where(args: argparse.Namespace) -> tuple[str, str]:
    """The board's URL and token from the options, the environment or the run directory
    (there: the token of `--as` alone, derived from the owner's)."""
    url, token = args.url, args.token or os.environ.get(TOKEN_ENV)
    if args.run_dir:
        from swarmflow.teams.http import agent_token

        address = _address(args.run_dir)
        url, token = address.url, token or agent_token(address.token, args.agent)
    if not token:
        raise ValueError(f"no token: give --token, set {TOKEN_ENV} or use --run-dir")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--url {url!r} is not an http:// URL")
    return url.rstrip("/"), token


class _Unreachable(Exception):
    """No answer from a board (nothing listens, or it is not a swarmflow board)."""


def _request(
    url: str, token: str, body: dict[str, object] | None, timeout: float
) -> tuple[int, dict[str, JsonValue]]:
    """The board's HTTP status and its JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, _decoded(response.read())
    except urllib.error.HTTPError as error:
        return error.code, _decoded(error.read())
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _Unreachable(f"no board answers at {url}: {reason}") from None


def _decoded(raw: bytes) -> dict[str, JsonValue]:
    try:
        answer = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Unreachable("the server did not answer as a swarmflow board") from None
    if not isinstance(answer, dict):
        raise _Unreachable("the server did not answer as a swarmflow board")
    return answer


def _print(status: int, answer: dict[str, JsonValue], *, as_json: bool) -> int:
    """Print the answer; its exit status (a malformed request is a usage error)."""
    if not answer.get("ok"):
        print(f"swarmflow board: {answer.get('error', 'refused')}", file=sys.stderr)
        return USAGE if status == 400 else REFUSED
    if as_json:
        print(json.dumps(answer.get("snapshot", answer), indent=2, ensure_ascii=False))
    else:
        print(answer.get("text", ""))
    return OK


def token_command(args: argparse.Namespace) -> int:
    """Print the token of `--as` for the board RUN_DIR serves: it acts as that agent only."""
    from swarmflow.teams.http import agent_token

    try:
        address = _address(args.run_dir)
    except ValueError as exc:
        print(f"swarmflow board token: {exc}", file=sys.stderr)
        return USAGE
    if address.agents and args.agent not in address.agents:
        print(
            f"swarmflow board token: no agent named {args.agent!r} on this run's team "
            f"(agents: {', '.join(address.agents)})",
            file=sys.stderr,
        )
        return USAGE
    print(agent_token(address.token, args.agent))
    return OK


# -- serving a run directory's board ------------------------------------------------------------


def serve_command(args: argparse.Namespace) -> int:
    """Serve RUN_DIR's board until Ctrl-C or SIGTERM; either ends it as a normal stop does
    (`board.json` and `run.pid` removed, the log closed)."""
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
        stopped_by = anyio.run(_serve, board_run, args.port)
    except ConfigError as exc:
        print(f"swarmflow board serve: {exc}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:  # a Ctrl-C before the signals are watched
        stopped_by = "Ctrl-C"
    print(f"board: stopped ({stopped_by}); the run directory is free again", file=sys.stderr)
    return OK


_STOP_SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}
"""The signals that end a serving as a normal stop does, and how the stop line names them."""


async def _serve(board_run: AbstractAsyncContextManager[RunContext], port: int) -> str:
    """Serve until a stop signal; how it was stopped. Leaving the blocks removes `board.json`
    and releases the run directory, whichever signal it was."""
    import anyio

    from swarmflow.teams.http import serving_board

    with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
        async with board_run as ctx, serving_board(ctx, port) as address:
            announce(address.url, address.token, address.path)
            signum = await anext(signals)
    return _STOP_SIGNALS[signal.Signals(signum)]


def announce(url: str, token: str, path: Path) -> None:
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
        print(
            f"token: {address.token} (also in {address.path}, mode 0600)",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        """Nothing to release."""
