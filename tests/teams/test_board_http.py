"""The board over HTTP on loopback: an agent outside the process takes part through the
`swarmflow board` commands, run as real subprocesses against a real server, under the same
topology checks and events as a tool call."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.record.events import parse_event
from swarmflow.record.files import EVENTS_FILE
from swarmflow.runtime.context import current_run
from swarmflow.teams.board import Board, board_for
from swarmflow.teams.http import read_address
from swarmflow.testing import FunctionModel
from tests.teams.board_support import ROOT, cli, of_type, on_board
from tests.teams.board_support import cli_env as _env

SECRET = "the launch code is alpha bravo nine nine"

TEAM = Team(
    [Agent("lead"), Agent("helper"), Agent("coder"), Agent("keeper")],
    edges=[("lead", "helper"), ("helper", "lead"), ("lead", "coder"), ("keeper", "helper")],
)


def _events(run_dir: Path) -> list[Any]:
    return [parse_event(line) for line in (run_dir / EVENTS_FILE).read_bytes().splitlines()]


async def test_an_outside_agent_talks_on_a_live_run_through_the_commands() -> None:
    async def body(board: Board) -> Any:
        here = current_run().deps.run_dir
        mode = stat.S_IMODE((here / "board.json").stat().st_mode)
        token = read_address(here).token
        await agent("keeper", "keep it")
        board.create_thread("lead", "ext", ["helper"])
        board.send_message("lead", "ext", "what is two and two?", ["helper"])
        as_helper = ("--run-dir", here, "--as", "helper")
        waited = await cli("wait", *as_helper, "--timeout", "20")
        sent = await cli("send", *as_helper, "ext", "four", "--mention", "lead")
        bad_mention = await cli("send", *as_helper, "ext", "psst", "--mention", "coder")
        smuggled = await cli("send", *as_helper, "ext", f"fyi {SECRET.upper()}")
        invite = await cli("create-thread", *as_helper, "side", "coder")
        shown = await cli("show", *as_helper, "--json")
        reply = await board.wait_for_mention("lead", 20)
        shown_json = json.loads(shown[1])
        leaked = token in (here / EVENTS_FILE).read_text()
        return leaked, mode, waited, sent, bad_mention, smuggled, invite, shown_json, reply

    model = FunctionModel(lambda request: SECRET)
    result = await on_board(body, TEAM, board_port=0, model=model)
    assert result.status == "ok", result.error
    leaked, mode, waited, sent, bad_mention, smuggled, invite, shown, reply = result.output
    assert mode == 0o600
    assert waited[0] == 0 and "what is two and two?" in waited[1]
    assert sent[0] == 0 and "posted message 2 to #ext" in sent[1]
    assert bad_mention[0] == 1 and "no edge helper -> coder" in bad_mention[2]
    assert smuggled[0] == 1 and "'keeper' to 'lead'" in smuggled[2]
    assert invite[0] == 1 and "no edge helper -> coder" in invite[2]
    assert [m["content"] for m in shown["threads"][0]["messages"]] == [
        "what is two and two?",
        "four",
    ]
    assert "@mention in #ext from helper" in reply and "four" in reply
    served = of_type(result, "board_served")[0]
    assert served.url.startswith("http://127.0.0.1:")
    assert not await anyio.Path(served.address_file).exists()  # removed with the server
    delivered = [(e.recipient, e.mode) for e in of_type(result, "mention_delivered")]
    assert delivered == [("helper", "blocking"), ("lead", "blocking")]
    routes = [(e.route, e.target) for e in of_type(result, "board_refused")]
    assert routes == [("mention", "coder"), ("invitation", "coder")]
    assert [e.via for e in of_type(result, "handoff_refused")] == ["board"]
    assert not leaked  # the token is in board.json only


def _raw(url: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except (urllib.error.URLError, ConnectionError):
        # An oversized body: the server answered 413 and closed the connection before the
        # client had sent it all.
        return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"ok": False, "error": "closed mid-send"}


async def test_hostile_requests_get_clear_statuses() -> None:
    async def body(board: Board) -> Any:
        address = read_address(current_run().deps.run_dir)
        auth = {"Authorization": f"Bearer {address.token}"}
        asks = [
            (f"{address.url}/threads", b'{"as": "lead", "name": "x"}', {}),
            (f"{address.url}/threads", b'{"as": "lead"', auth),
            (f"{address.url}/threads", b"[1, 2]", auth),
            (f"{address.url}/threads", b'{"name": "x"}', auth),
            (f"{address.url}/nowhere", b"{}", auth),
            (f"{address.url}/threads", b'{"as": "mallory", "name": "x"}', auth),
            (f"{address.url}/wait", b'{"as": "lead", "timeout": -5}', auth),
            (f"{address.url}/wait", b'{"as": "lead", "timeout": null}', auth),
            (f"{address.url}/messages", b"{" + b" " * (2 << 20) + b"}", auth),
        ]
        return [await anyio.to_thread.run_sync(_raw, *ask) for ask in asks]

    result = await on_board(body, TEAM, board_port=0)
    assert result.status == "ok", result.error
    statuses = [status for status, _ in result.output]
    assert statuses == [401, 400, 400, 400, 404, 403, 400, 400, 413]
    assert all(answer["ok"] is False and answer["error"] for _, answer in result.output)


@contextlib.contextmanager
def _served(
    run_dir: Path, stop: signal.Signals = signal.SIGINT
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`swarmflow board serve RUN_DIR` as a subprocess, stopped with `stop` (Ctrl-C) on the
    way out (and killed if it will not stop), so that no server outlives its test."""
    argv = [sys.executable, "-m", "swarmflow.cli", "board", "serve", str(run_dir)]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=_env())
    assert server.stdout is not None
    try:
        url = server.stdout.readline().removeprefix("board: ").strip()
        token = server.stdout.readline().removeprefix("token: ").split()[0]
        yield server, url, token
    finally:
        server.send_signal(stop)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            raise
        finally:
            server.stdout.close()


@flow(team=TEAM)
async def asks_helper() -> str:
    board = board_for(current_run())
    board.create_thread("lead", "ext", ["helper"])
    return board.send_message("lead", "ext", "still there?", ["helper"])


def test_board_serve_serves_a_run_directory_and_appends_to_its_log(tmp_path: Path) -> None:
    result = anyio.run(lambda: run(asks_helper, model=FunctionModel(lambda r: "x")))
    run_dir = result.run_dir
    (run_dir / "run.json").write_text(json.dumps({"flow": f"{__file__}:asks_helper"}))
    with _served(run_dir) as (server, url, token):
        assert (run_dir / "run.pid").read_text() == str(server.pid)
        base = ["--url", url, "--token", token, "--as", "helper"]
        waited = anyio.run(cli, "wait", *base, "--timeout", "20")
        reply = functools.partial(cli, stdin="yes, here: ✓\n".encode())
        sent = anyio.run(reply, "send", *base, "ext", "-", "--mention", "lead")
        wrong = anyio.run(cli, "show", "--url", url, "--token", "nope", "--as", "helper")
    assert waited[0] == 0 and "still there?" in waited[1], waited
    assert sent[0] == 0 and "posted message 2 to #ext" in sent[1]
    assert wrong[0] == 1 and "token" in wrong[2]
    events = _events(run_dir)
    assert [e.seq for e in events] == list(range(len(events)))
    (posted,) = [e for e in events if e.type == "board_message_posted" and e.sender == "helper"]
    assert (posted.text, posted.mentions) == ("yes, here: ✓\n", ["lead"])
    assert [e.recipient for e in events if e.type == "mention_delivered"] == ["helper"]
    # The board's record is its events: both messages are there for a later resume.
    assert [e.message_seq for e in events if e.type == "board_message_posted"] == [1, 2]
    assert not (run_dir / "board.json").exists() and not (run_dir / "run.pid").exists()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stopped_serving_leaves_no_token_and_no_claim(stop: signal.Signals) -> None:
    result = anyio.run(lambda: run(asks_helper, model=FunctionModel(lambda r: "x")))
    run_dir = result.run_dir
    (run_dir / "run.json").write_text(json.dumps({"flow": f"{__file__}:asks_helper"}))
    with _served(run_dir, stop) as (server, _, token):
        # Announced, so served: its token is on disk and the run directory is claimed.
        assert token in (run_dir / "board.json").read_text()
        assert (run_dir / "run.pid").read_text() == str(server.pid)
    assert server.returncode == 0  # a normal stop, not a death by signal
    assert not (run_dir / "board.json").exists() and not (run_dir / "run.pid").exists()
    assert _events(run_dir)  # the log is whole: every line reads back


def _request_threads() -> list[threading.Thread]:
    """The server's threads that are handling a request now."""
    return [t for t in threading.enumerate() if t.name.endswith("(process_request_thread)")]


def _join(thread: threading.Thread) -> None:
    """Wait for a server thread; one just listed may not have been marked started yet."""
    thread._started.wait(30)  # `join` refuses a thread until this is set
    thread.join(30)


def _post_and_hang_up(url: str, token: str) -> None:
    """A whole request, then a reset in place of reading the answer (a client that quits)."""
    where = urlsplit(url)
    body = b'{"as": "lead", "name": "gone"}'
    head = (
        f"POST /threads HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    conn = socket.create_connection((where.hostname, where.port), timeout=10)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.sendall(head.encode() + body)
    conn.close()


async def test_a_client_that_hangs_up_is_let_go_quietly(capsys: pytest.CaptureFixture[str]) -> None:
    async def body(board: Board) -> Any:
        address = read_address(current_run().deps.run_dir)
        # On the run's own loop thread: the request's board call cannot run (nor its answer be
        # written) until this body awaits, so the client is gone before any answer is sent.
        # Whether the server had read the request before the reset came depends on the
        # machine; either way it must let the client go quietly and go on serving.
        _post_and_hang_up(address.url, address.token)
        auth = {"Authorization": f"Bearer {address.token}"}
        after = await anyio.to_thread.run_sync(
            _raw, f"{address.url}/threads", b'{"as": "lead", "name": "after"}', auth
        )
        for handler in _request_threads():
            await anyio.to_thread.run_sync(_join, handler)
        return after[0], [t.is_alive() for t in _request_threads()]

    result = await on_board(body, TEAM, board_port=0)
    assert result.status == "ok", result.error
    assert result.output == (200, [])  # the server still answers, and no handler is left
    # The hung-up request's board call and the later one reach the run's loop from two
    # handler threads, in either order.
    assert sorted(e.thread for e in of_type(result, "thread_created")) in (["after", "gone"], ["after"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err


def test_board_serve_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    missing = anyio.run(cli, "serve", tmp_path)
    assert missing[0] == 2 and "not a run directory" in missing[2]
    result = anyio.run(lambda: run(asks_helper, model=FunctionModel(lambda r: "x")))
    (result.run_dir / "run.pid").write_text(str(os.getpid()))
    live = anyio.run(cli, "serve", result.run_dir)
    assert live[0] == 2 and "still running" in live[2]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("wait", "--url", "http://127.0.0.1:9", "--token", "t", "--as", "lead"), "no board"),
        (("wait", "--url", "http://127.0.0.1:9", "--as", "lead"), "no token"),
        (("wait", "--url", "ftp://x", "--token", "t", "--as", "lead"), "not an http"),
    ],
)
def test_the_commands_say_what_is_wrong(args: tuple[str, ...], says: str) -> None:
    env_token = os.environ.pop("SWARMFLOW_BOARD_TOKEN", None)
    try:
        code, _, err = anyio.run(cli, *args)
    finally:
        if env_token is not None:
            os.environ["SWARMFLOW_BOARD_TOKEN"] = env_token
    assert code == 2 and says in err


def test_swarmflow_run_board_port_serves_and_says_where(tmp_path: Path) -> None:
    flow_file = ROOT / "tests" / "durable" / "busy.swarm"
    argv = [sys.executable, "-m", "swarmflow.cli", "run", str(flow_file), "--demo"]
    env = {**_env(), "SWARMFLOW_RUNS": str(tmp_path)}
    done = subprocess.run(
        [*argv, "--board-port", "0"], check=False, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "board: http://127.0.0.1:" in done.stderr and "token: " in done.stderr
    (run_dir,) = tmp_path.iterdir()
    (served,) = [e for e in _events(run_dir) if e.type == "board_served"]
    assert served.url in done.stderr
    assert not (run_dir / "board.json").exists()
    refused = subprocess.run(
        [*argv, "--board-port", "-1"], check=False, capture_output=True, text=True, env=env
    )
    assert refused.returncode == 1 and "cannot serve the board" in refused.stdout + refused.stderr
