"""Adherence and the report of a Team run, read back from its event log alone."""

from __future__ import annotations

from pathlib import Path

from swarmflow import Agent, TeamResult, team
from swarmflow.core.messages import ModelRequest
from swarmflow.report.adherence import adherence, participants
from swarmflow.report.html import render_html
from swarmflow.report.log import read_log
from swarmflow.report.team import message_matrix, token_shares
from swarmflow.report.text import report_from_dir
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import run_one

ROLES = [
    Agent("lead", tools=["message_agent", "submit"]),
    Agent("coder", tools=["message_agent"]),
    Agent("reviewer"),
]
EDGES = [("lead", "coder"), ("lead", "reviewer"), ("coder", "reviewer")]


def _policy(reviewer_says: str):  # type: ignore[no-untyped-def]
    def policy(req: ModelRequest) -> object:
        last = req.messages[-1]
        if req.agent == "reviewer":
            return reviewer_says
        if req.agent == "coder":
            if last.role != "tool":
                return tool_call("message_agent", to="reviewer", text="look at add")
            return "add written and shown to the reviewer"
        tools = [m for m in req.messages if m.role == "tool"]
        if not tools:
            return tool_call("message_agent", to="coder", text="write add")
        if len(tools) == 1:
            return tool_call("message_agent", to="reviewer", text="is add right?")
        return tool_call("submit", summary="add is done")

    return policy


async def _team_log(tmp_path: Path, reviewer_says: str) -> tuple[TeamResult, Path]:
    result = await run_one(
        ROLES,
        lambda: team("add two numbers", lead="lead"),
        FunctionModel(_policy(reviewer_says)),
        edges=EDGES,
        runs_root=tmp_path,
    )
    assert isinstance(result.output, TeamResult), result.error
    assert result.events_path is not None
    return result.output, result.events_path.parent


async def test_adherence_of_a_team_run_is_read_from_its_log(tmp_path: Path) -> None:
    out, run_dir = await _team_log(tmp_path, "looks right")
    events = read_log(run_dir).events
    found = adherence(events)
    assert found.axis("participation").realized == {"lead": True, "coder": True, "reviewer": True}
    assert found.axis("delegation").realized == ["coder", "reviewer"]
    flow = found.axis("information flow")
    assert flow.realized == {"messages": 3, "board messages": 0, "refused": 0} and flow.ok
    assert found.adherent and out.messages == 3


async def test_an_agent_whose_only_replies_were_empty_did_not_participate(
    tmp_path: Path,
) -> None:
    _, run_dir = await _team_log(tmp_path, "")
    events = read_log(run_dir).events
    assert participants(events) == {"lead", "coder"}  # the reviewer spent tokens, said nothing
    found = adherence(events)
    assert found.axis("participation").deviations == ("declared agent 'reviewer' did no work",)
    assert "reviewer" not in found.axis("delegation").realized


async def test_the_report_shows_who_talked_to_whom_and_token_shares(tmp_path: Path) -> None:
    _, run_dir = await _team_log(tmp_path, "looks right")
    log = read_log(run_dir)
    matrix = message_matrix(log.events)
    assert matrix.counts == {("lead", "coder"): 1, ("lead", "reviewer"): 1,
                             ("coder", "reviewer"): 1}  # fmt: skip
    shares = token_shares(log.events)
    assert set(shares) == {"lead", "coder", "reviewer"}
    for i in range(10):  # every tenth with calls sums to one
        total = sum(row[i] for row in shares.values())
        assert total == 0.0 or abs(total - 1.0) < 1e-9
    text = report_from_dir(run_dir)
    assert "Who talked to whom" in text and "Share of tokens over the run" in text
    page = render_html(log)
    assert 'id="message-matrix"' in page and 'id="token-shares"' in page
