"""Shared set-up of the board tests: a team, a run whose flow body works on the board, and
tool calls made the way a session makes them."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, RunResult, Team, flow, run
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.record.events import EventBase
from swarmflow.runtime.context import current_run
from swarmflow.teams.board import Board, board_for
from swarmflow.testing import FunctionModel
from swarmflow.tools import default_registry

BOARD_TOOLS = ("create_thread", "send_message", "wait_for_mention")
ROOT = Path(__file__).resolve().parents[2]

TEAM = Team(
    [
        Agent("lead", tools=BOARD_TOOLS),
        Agent("coder", tools=BOARD_TOOLS),
        Agent("reviewer", tools=BOARD_TOOLS),
        Agent("outsider", tools=BOARD_TOOLS),
    ],
    edges=[
        ("lead", "coder"),
        ("lead", "reviewer"),
        ("coder", "lead"),
        ("coder", "reviewer"),
        ("reviewer", "lead"),
        ("outsider", "lead"),
    ],
)

Body = Callable[[Board], Awaitable[Any]]


async def on_board(body: Body, team: Team = TEAM, **options: Any) -> RunResult:
    """Run a flow whose body is `body(board)`; the run's result (failures returned)."""

    @flow(team=team)
    async def board_flow() -> Any:
        return await body(board_for(current_run()))

    model = options.pop("model", FunctionModel(lambda request: "fine"))
    return await run(board_flow, model=model, raise_on_failure=False, **options)


async def call_tool(board: Board, agent: str, name: str, args: dict[str, Any] | str) -> ToolResult:
    """Call a board tool as `agent`'s session would: raw arguments, parsed and validated."""
    ctx = ToolContext(agent=agent, session=f"{agent}-s", workspace=None,
                      emit=lambda *a, **k: None, board=board)  # fmt: skip
    return await default_registry().execute(name, args, ctx)


def of_type(result: RunResult, kind: str) -> list[EventBase]:
    return [e for e in result.events if getattr(e, "type", "") == kind]


def cli_env() -> dict[str, str]:
    """The environment a `swarmflow` subprocess of the tests runs in."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


async def cli(*args: str | Path, stdin: bytes = b"") -> tuple[int, str, str]:
    """`swarmflow board ...` as a subprocess: exit status, stdout, stderr."""
    argv = [sys.executable, "-m", "swarmflow.cli", "board", *map(str, args)]
    done = await anyio.run_process(argv, input=stdin, check=False, env=cli_env())
    return done.returncode, done.stdout.decode(), done.stderr.decode()
