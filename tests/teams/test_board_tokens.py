"""A served board's tokens: none reaches the run's record, whatever an agent repeats, and a
token bound to one agent acts as that agent only."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.runtime.context import current_run
from swarmflow.teams.board import Board
from swarmflow.teams.http import read_address
from swarmflow.testing import FunctionModel, tool_call
from tests.teams.board_support import cli, of_type, on_board

TEAM = Team(
    [Agent("lead", tools=["create_thread", "send_message"]), Agent("helper"), Agent("coder")],
    edges=[("lead", "helper"), ("helper", "lead"), ("lead", "coder")],
)


async def test_no_token_of_a_served_board_reaches_the_events_or_the_journal(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    async def tokens() -> list[str]:
        """The owner's token (in board.json) and the helper's own, as the CLI hands it out."""
        here = current_run().deps.run_dir
        code, out, err = await cli("token", "--run-dir", here, "--as", "helper")
        assert code == 0, err
        return [read_address(here).token, out.strip()]

    def leaky(request: ModelRequest) -> object:
        """Repeats the tokens in a tool call's arguments and in its answer."""
        said = " and ".join(seen)
        done = [m for m in request.messages if m.role == "tool"]
        if not done:
            return tool_call("create_thread", name="keys", participants=["helper"])
        if len(done) == 1:
            return tool_call("send_message", thread="keys", content=f"the tokens: {said}")
        return f"done; the tokens were {said}"

    @flow(team=TEAM)
    async def leaks() -> str:
        seen.extend(await tokens())
        return (await agent("lead", "read board.json aloud")).text

    result = await run(leaks, model=FunctionModel(leaky), board_port=0, runs_root=tmp_path)
    assert result.run_dir is not None and len(seen) == 2
    assert all(token in result.output for token in seen)  # the flow's own value is whole
    for name in (EVENTS_FILE, JOURNAL_FILE):
        written = (result.run_dir / name).read_text()
        assert "[redacted]" in written, name
        assert not [token for token in seen if token in written], name
    (posted,) = of_type(result, "board_message_posted")
    assert posted.text == "the tokens: [redacted] and [redacted]"


def _as(url: str, token: str, agent: str | None) -> tuple[int, dict[str, Any]]:
    """A message posted as `agent` with `token` (None: `GET /boards`)."""
    body = {"as": agent, "thread": "ext", "content": f"{agent} here"}
    request = urllib.request.Request(
        f"{url}/messages" if agent else f"{url}/boards",
        data=json.dumps(body).encode() if agent else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def test_a_token_bound_to_one_agent_cannot_act_as_another() -> None:
    async def body(board: Board) -> Any:
        here = current_run().deps.run_dir
        address = read_address(here)
        board.create_thread("lead", "ext", ["helper", "coder"])
        code, out, _ = await cli("token", "--run-dir", here, "--as", "helper")
        helper = out.strip()
        _, coder, _ = await cli("token", "--run-dir", here, "--as", "coder")
        base = ("--url", address.url, "--token", helper)
        asks = {
            "own": await cli("send", *base, "--as", "helper", "ext", "helper here"),
            "other": await cli("send", *base, "--as", "lead", "ext", "lead here"),
            "peek": await cli("show", *base, "--as", "lead"),
            "ghost": await cli("token", "--run-dir", here, "--as", "ghost"),
            "run_dir": await cli("send", "--run-dir", here, "--as", "lead", "ext", "via run dir"),
        }
        raw = {
            "other": await anyio.to_thread.run_sync(_as, address.url, coder.strip(), "lead"),
            "owner": await anyio.to_thread.run_sync(_as, address.url, address.token, "lead"),
            "stranger": await anyio.to_thread.run_sync(_as, address.url, "sfb-0-sfb", "lead"),
            "boards": await anyio.to_thread.run_sync(_as, address.url, helper, None),
        }
        return code, helper, address, asks, raw

    result = await on_board(body, TEAM, board_port=0)
    assert result.status == "ok", result.error
    code, helper, address, asks, raw = result.output
    assert code == 0 and helper.startswith("sfb-") and helper != address.token
    assert address.agents == ("lead", "helper", "coder")
    assert asks["own"][0] == 0 and "posted message" in asks["own"][1]
    for refused in ("other", "peek"):
        status, _, err = asks[refused]
        assert status == 1 and "this token is helper's; it cannot act as 'lead'" in err, err
        assert err.count("\n") == 1  # one line
    assert asks["ghost"][0] == 2 and "no agent named 'ghost'" in asks["ghost"][2]
    assert asks["run_dir"][0] == 0  # --run-dir derives the token of --as from board.json
    assert raw["other"][0] == 403 and raw["other"][1]["field"] == "as"
    assert raw["owner"][0] == 200  # the owner's token acts as any agent
    assert raw["stranger"][0] == 401
    assert raw["boards"] == (200, {"ok": True, "boards": [""], "default": ""})
    senders = [(e.sender, e.text) for e in of_type(result, "board_message_posted")]
    assert senders == [("helper", "helper here"), ("lead", "via run dir"), ("lead", "lead here")]
