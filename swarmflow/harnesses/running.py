"""One run of a harness's program: its endpoints served, the program run, the session ended.

`run_harness` serves the metering endpoint (and the board, when the harness asks for it) for
the program's lifetime only, runs the program in the session's workspace, and ends the
session with what happened: `completed` with its answer, `error` when it failed or wrote no
answer, `wall clock` at its timeout, the endpoint's reason when it was stopped at the
agent's allowance or step limit, `cancelled` when the run was. `harness_started` and
`harness_ended` frame it in the record.
"""

from __future__ import annotations

import json
import secrets
from contextlib import AsyncExitStack
from pathlib import Path
from time import perf_counter

import anyio
import anyio.to_thread
from anyio.abc import SocketAttribute, SocketListener, TaskGroup

from swarmflow.core import safe_paths
from swarmflow.core.harness_spec import Harness
from swarmflow.core.states import EndReason
from swarmflow.harnesses.http_server import Bounds, HttpServer, serving
from swarmflow.harnesses.launch import (
    BOARD_PORT,
    ENDPOINT_PORT,
    Private,
    endpoint_env,
    host_launch,
    limited,
    placeholders,
    sandboxed_launch,
)
from swarmflow.harnesses.meter import Meter
from swarmflow.harnesses.process import Exited, run_program
from swarmflow.harnesses.relay import relay_unix_to_tcp
from swarmflow.harnesses.transcript import HarnessSteps
from swarmflow.record.events import HarnessEnded, HarnessStarted, SandboxUnavailable
from swarmflow.sessions.outside import begin_outside, end_outside
from swarmflow.sessions.session import AgentSession
from swarmflow.teams.http import agent_token, serving_board
from swarmflow.tools.sandbox import bwrap_problem
from swarmflow.tools.shell import Launch

ANSWER_CAP = 4 << 20


class HarnessError(Exception):
    """The harness could not run, failed, or left no answer; the message says which."""


class _Ending:
    """How the call ends, once known."""

    def __init__(self) -> None:
        self.reason: EndReason | None = None
        self.detail = ""
        self.scope = anyio.CancelScope()

    def stop(self, reason: EndReason, detail: str) -> None:
        """The endpoint's stop: the program is killed, the session ends with `reason`."""
        if self.reason is None:
            self.reason, self.detail = reason, detail
        self.scope.cancel()


async def run_harness(session: AgentSession, harness: Harness, prompt: str) -> None:
    """Run the program for one agent call and end `session` with its outcome."""
    turn = begin_outside(session)
    ending = _Ending()
    key = f"sfk-{secrets.token_hex(24)}"
    session.run.deps.log.redactor.add(key)  # never in the record, whatever the program prints
    meter = Meter(turn, harness, key, ending.stop, HarnessSteps(harness.name))
    started = perf_counter()
    exited: Exited | None = None
    try:
        sandboxed = await _sandboxed(session)
        private = Private.made(sandboxed)
        try:
            exited = await _serve_and_run(
                session, harness, prompt, meter=meter, ending=ending, private=private
            )
            reason, detail, text = _outcome(harness, private, exited, ending)
        finally:
            private.remove()
        end_outside(session, reason, detail, text)
    except anyio.get_cancelled_exc_class():
        end_outside(session, EndReason.CANCELLED, "cancelled from outside the session", "")
        _ended(session, harness, meter, exited, started)
        raise
    except HarnessError as exc:
        end_outside(session, EndReason.ERROR, str(exc), "", exc)
    except OSError as exc:  # a socket that cannot be bound, a program that cannot start
        failed = HarnessError(f"{harness.name} could not be started: {exc}")
        end_outside(session, EndReason.ERROR, str(failed), "", failed)
    _ended(session, harness, meter, exited, started)


async def _sandboxed(session: AgentSession) -> bool:
    """Whether the program runs under bubblewrap; refuses `sandbox="bwrap"` without it, and
    says once per run that `"auto"` runs it on the host."""
    mode = session.agent.sandbox
    if mode == "none":
        return False
    problem = await anyio.to_thread.run_sync(bwrap_problem)
    if problem is None:
        return True
    if mode == "bwrap":
        raise HarnessError(
            f"agent {session.agent.name!r} runs only in the sandbox "
            f"(sandbox='bwrap'), but {problem}; the harness was not started"
        )
    notes = getattr(session.workspace, "notes", None)
    if not isinstance(notes, set) or "harness_unsandboxed" not in notes:
        if isinstance(notes, set):
            notes.add("harness_unsandboxed")
        session.emit(
            SandboxUnavailable,
            reason=f"{problem}. Harness programs run on the host: "
            "they can read and write what your user can, and reach the network.",
        )
    return False


async def _serve_and_run(
    session: AgentSession,
    harness: Harness,
    prompt: str,
    *,
    meter: Meter,
    ending: _Ending,
    private: Private,
) -> Exited | None:
    """Serve the endpoints, run the program; None when the endpoint stopped it."""
    server = HttpServer(meter.handle, Bounds(), meter.count)
    async with AsyncExitStack() as stack:
        # Entered in order and left in reverse: the relays' group outlives what they serve.
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        base_url = await _serve_endpoint(stack, server, private)
        board_env = await _board(stack, session, private, tg) if harness.board else {}
        env = endpoint_env(base_url, meter.key, board_env, private) | dict(harness.env)
        launch = _launch(session, harness, prompt, private=private, base_url=base_url, env=env)
        session.emit(
            HarnessStarted,
            harness=harness.name,
            program=Path(harness.command[0]).name,
            sandboxed=launch.sandboxed,
            endpoint=base_url,
            board=harness.board,
        )
        session.run.deps.write_ahead()  # starting a program is an external effect
        stdin = prompt.encode() if harness.task == "stdin" else None
        exited = None
        with ending.scope:
            exited = await run_program(limited(launch, harness), stdin, harness.timeout)
    return exited


async def _serve_endpoint(stack: AsyncExitStack, server: HttpServer, private: Private) -> str:
    """Serve the metering endpoint (a Unix socket for the sandbox, else the host's loopback)
    and return its base URL as the program sees it."""
    if private.seen != private.root:
        listener = await anyio.create_unix_listener(private.model_socket)
        await stack.enter_async_context(serving(server, [listener]))
        return f"http://127.0.0.1:{ENDPOINT_PORT}/v1"
    (tcp,) = (await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)).listeners
    assert isinstance(tcp, SocketListener)  # one IPv4 address: one socket listener
    await stack.enter_async_context(serving(server, [tcp]))
    return f"http://127.0.0.1:{tcp.extra(SocketAttribute.local_port)}/v1"


def _launch(
    session: AgentSession,
    harness: Harness,
    prompt: str,
    *,
    private: Private,
    base_url: str,
    env: dict[str, str],
) -> Launch:
    """The program's command line, sandboxed or on the host, its task file written."""
    argv = harness.argv(placeholders(private, base_url, harness, prompt))
    if harness.task == "file":
        safe_paths.write_bytes(private.root, "task.md", prompt.encode("utf-8"))
    workspace = session.workspace
    root = (Path(workspace.root) if workspace is not None else Path.cwd()).resolve()
    if private.seen == private.root:
        return host_launch(session.agent, root, private, argv, env)
    run_dir = session.run.deps.run_dir
    extra = tuple(getattr(workspace, "sandbox_read_only", ()))
    return sandboxed_launch(
        session.agent, root, run_dir=run_dir, private=private, argv=argv, env=env, read_only=extra
    )


async def _board(
    stack: AsyncExitStack, session: AgentSession, private: Private, tg: TaskGroup
) -> dict[str, str]:
    """Serve the run's board for this call; the program gets this agent's token alone."""
    address = await stack.enter_async_context(serving_board(session.run, 0, publish=False))
    token = agent_token(address.token, session.agent.name)
    url = address.url
    if private.seen != private.root:
        port = int(url.rsplit(":", 1)[1])
        listening = anyio.Event()
        tg.start_soon(_relay, private, port, tg, listening)
        await listening.wait()
        url = f"http://127.0.0.1:{BOARD_PORT}"
    private.write_board_commands()
    return {
        "SWARMFLOW_BOARD_URL": url,
        "SWARMFLOW_BOARD_TOKEN": token,
        "SWARMFLOW_AGENT": session.agent.name,
    }


async def _relay(private: Private, port: int, tg: TaskGroup, listening: anyio.Event) -> None:
    await relay_unix_to_tcp(private.board_socket, port, tg, listening)


def _outcome(
    harness: Harness, private: Private, exited: Exited | None, ending: _Ending
) -> tuple[EndReason, str, str]:
    if ending.reason is not None:
        return ending.reason, ending.detail, ""
    assert exited is not None
    if exited.timed_out:
        return (
            EndReason.WALL_CLOCK,
            f"{harness.name} ran past its timeout of "
            f"{harness.timeout:g}s; it and every process it started were killed",
            "",
        )
    if exited.exit_code != 0:
        tail = " ".join(exited.stderr.split())[-500:]
        raise HarnessError(
            f"{harness.name} exited with code {exited.exit_code}: {tail or 'no output on stderr'}"
        )
    return EndReason.COMPLETED, "", read_answer(harness, private, exited.stdout)


def read_answer(harness: Harness, private: Private, stdout: str) -> str:
    """The program's final answer: its stdout or its answer file, or a field of that JSON."""
    text = stdout
    if harness.answer == "file":
        # The program writes its folder: read through the safe-path layer, so an answer
        # file that is a link to a host file is refused, never followed.
        try:
            raw = safe_paths.read_bytes(private.root, "answer", ANSWER_CAP)
        except FileNotFoundError:
            raise HarnessError(f"{harness.name} exited without writing its answer file") from None
        except OSError as exc:
            raise HarnessError(f"{harness.name}'s answer file is refused: {exc}") from None
        text = raw.decode("utf-8", errors="replace")
    if harness.answer_field is None:
        return text.strip()
    return _field(harness, text)


def _field(harness: Harness, text: str) -> str:
    where = f"{harness.name}'s answer ({harness.answer}, field {harness.answer_field!r})"
    try:
        value = json.loads(text)
    except ValueError:
        raise HarnessError(f"{where} is not JSON") from None
    for part in (harness.answer_field or "").split("."):
        if not isinstance(value, dict) or part not in value:
            raise HarnessError(f"{where} has no {part!r}")
        value = value[part]
    return (value if isinstance(value, str) else json.dumps(value)).strip()


def _ended(
    session: AgentSession, harness: Harness, meter: Meter, exited: Exited | None, started: float
) -> None:
    meter.steps.ended(meter.turn.emit)
    session.emit(
        HarnessEnded,
        harness=harness.name,
        reason=(session.reason or EndReason.COMPLETED).value,
        exit_code=None if exited is None else exited.exit_code,
        seconds=round(perf_counter() - started, 3),
        calls=session.steps,
        tokens=session.usage.total,
        refusals=dict(meter.refusals),
        stderr=("" if exited is None else exited.stderr)[-2000:],
    )
