"""Every route onto the board is checked against the team: invitations, thread messages,
mentions and the text itself (a smuggled product). A refusal tells the sender, records an
event, and nothing reaches the target."""

from __future__ import annotations

from typing import Any

import anyio

from swarmflow import Agent, Team, agent
from swarmflow.core.messages import ModelRequest
from swarmflow.teams.board import Board
from swarmflow.testing import FunctionModel, Step, tool_call
from tests.teams.board_support import BOARD_TOOLS, TEAM, call_tool, of_type, on_board


async def test_an_invitation_without_an_edge_is_refused_and_opens_nothing() -> None:
    async def body(board: Board) -> Any:
        refused = await call_tool(board, "lead", "create_thread",
                                  {"name": "plan", "participants": ["coder", "outsider"]})  # fmt: skip
        return refused, board.snapshot()

    result = await on_board(body)
    refused, snapshot = result.output
    assert not refused.ok
    assert "no edge lead -> outsider" in refused.text
    assert snapshot.threads == []
    assert of_type(result, "thread_created") == []
    (event,) = of_type(result, "board_refused")
    assert (event.route, event.source, event.target) == ("invitation", "lead", "outsider")


async def test_a_thread_message_reaches_only_participants_the_sender_has_an_edge_to() -> None:
    async def body(board: Board) -> Any:
        board.create_thread("lead", "plan", ["coder", "reviewer"])
        posted = await call_tool(board, "reviewer", "send_message",
                                 {"thread": "plan", "content": "looks fine to me"})  # fmt: skip
        return posted, board.snapshot("coder"), board.snapshot("lead")

    result = await on_board(body)
    posted, coder_view, lead_view = result.output
    assert posted.ok
    assert "NOT delivered to coder" in posted.text
    assert coder_view.threads[0].messages == []
    assert [m.content for m in lead_view.threads[0].messages] == ["looks fine to me"]
    (refusal,) = of_type(result, "board_refused")
    assert (refusal.route, refusal.source, refusal.target) == ("message", "reviewer", "coder")
    (posted_event,) = of_type(result, "board_message_posted")
    assert posted_event.recipients == ["lead", "reviewer"]


async def test_a_mention_without_an_edge_refuses_the_whole_message() -> None:
    async def body(board: Board) -> Any:
        board.create_thread("lead", "plan", ["coder", "reviewer"])
        refused = await call_tool(board, "reviewer", "send_message",
                                  {"thread": "plan", "content": "@coder fix it",
                                   "mentions": ["lead", "coder"]})  # fmt: skip
        return refused, board.snapshot(), board.pending("coder"), board.pending("lead")

    result = await on_board(body)
    refused, snapshot, coder_pending, lead_pending = result.output
    assert not refused.ok
    assert "no edge reviewer -> coder" in refused.text
    assert snapshot.threads[0].messages == []
    assert coder_pending == [] and lead_pending == []
    assert of_type(result, "board_message_posted") == []
    (event,) = of_type(result, "board_refused")
    assert (event.route, event.target) == ("mention", "coder")


async def test_a_mention_of_a_non_participant_is_refused() -> None:
    async def body(board: Board) -> Any:
        board.create_thread("coder", "pair", ["reviewer"])
        return await call_tool(board, "coder", "send_message",
                               {"thread": "pair", "content": "see", "mentions": ["@lead"]})  # fmt: skip

    result = await on_board(body)
    assert not result.output.ok
    assert "lead does not take part in #pair" in result.output.text


async def test_a_smuggled_product_is_refused_by_the_handoff_check() -> None:
    team = Team(
        [*TEAM.agents, Agent("keeper", tools=BOARD_TOOLS)],
        edges=[*TEAM.edges, ("keeper", "coder")],
    )
    secret = "the vault combination is seven seven three nine one"

    async def body(board: Board) -> Any:
        kept = await agent("keeper", "tell the coder")
        board.create_thread("coder", "pair", ["reviewer"])
        relayed = f"FYI: {kept.text.upper()}!!"
        refused = await call_tool(board, "coder", "send_message",
                                  {"thread": "pair", "content": relayed})  # fmt: skip
        return refused, board.snapshot("reviewer")

    result = await on_board(body, team, model=FunctionModel(lambda request: secret))
    refused, reviewer_view = result.output
    assert not refused.ok
    assert "'keeper' to 'reviewer'" in refused.text
    assert reviewer_view.threads[0].messages == []
    (event,) = of_type(result, "handoff_refused")
    assert (event.source, event.target, event.via) == ("keeper", "reviewer", "board")
    assert of_type(result, "board_message_posted") == []


async def test_a_smuggled_product_in_a_thread_name_is_refused() -> None:
    team = Team([*TEAM.agents, Agent("keeper")], edges=[*TEAM.edges, ("keeper", "lead")])

    async def body(board: Board) -> Any:
        kept = await agent("keeper", "a name")
        return await call_tool(board, "lead", "create_thread",
                               {"name": kept.text, "participants": ["coder"]})  # fmt: skip

    model = FunctionModel(lambda request: "operation blue heron at dawn")
    result = await on_board(body, team, model=model)
    assert not result.output.ok
    assert of_type(result, "thread_created") == []
    assert of_type(result, "handoff_refused")[0].target == "coder"


async def test_mentions_arrive_in_order_and_wake_a_blocking_wait() -> None:
    async def body(board: Board) -> Any:
        board.create_thread("lead", "plan", ["coder", "reviewer"])
        board.create_thread("lead", "side", ["coder"])
        waited: list[str] = []

        async def wait() -> None:
            waited.append(await board.wait_for_mention("coder", 30))

        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            board.send_message("lead", "plan", "first", ["coder"])
        for i in range(5):
            board.send_message("lead", "side" if i % 2 else "plan", f"m{i}", ["coder"])
        assert board.has_pending("coder")
        await board.wait_pending("coder")  # returns at once, consumes nothing
        taken = board.take_mentions("coder")
        return waited, taken, board.has_pending("coder")

    result = await on_board(body)
    waited, taken, still = result.output
    assert "@mention in #plan from lead" in waited[0] and "first" in waited[0]
    assert "#side" in waited[0]  # the snapshot shows every thread the agent takes part in
    assert [m.content for m in taken] == [f"m{i}" for i in range(5)]
    assert [m.seq for m in taken] == sorted(m.seq for m in taken)
    assert not still
    modes = [e.mode for e in of_type(result, "mention_delivered")]
    assert modes == ["blocking"] + ["passive"] * 5


async def test_a_wait_that_times_out_says_so_and_shows_the_board() -> None:
    async def body(board: Board) -> Any:
        board.create_thread("lead", "plan", ["coder"])
        return await call_tool(board, "coder", "wait_for_mention", {"timeout": 0})

    result = await on_board(body)
    assert result.output.ok
    assert result.output.text.startswith("no mention within 0 s")
    assert "#plan" in result.output.text


async def test_a_session_calling_the_tools_is_told_of_a_refusal() -> None:
    def policy(request: ModelRequest) -> Step | str:
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if results:
            return f"the board said: {results[-1]}"
        post = tool_call("send_message", thread="plan", content="fix it", mentions=["coder"])
        return Step(tool_calls=(post,))

    async def body(board: Board) -> Any:
        board.create_thread("lead", "plan", ["coder", "reviewer"])
        out = await agent("reviewer", "report on the plan")
        return out.text, board.snapshot()

    result = await on_board(body, model=FunctionModel(policy))
    text, snapshot = result.output
    assert "no edge reviewer -> coder" in text
    assert snapshot.threads[0].messages == []
    (executed,) = [e for e in of_type(result, "tool_executed") if e.tool == "send_message"]
    assert not executed.ok
    (refused,) = of_type(result, "board_refused")
    assert (refused.route, refused.session) == ("mention", executed.session)
