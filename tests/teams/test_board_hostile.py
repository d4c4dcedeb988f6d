"""Hostile tool arguments get a clear refusal (and a `board_refused` event), never an
internal error, and change nothing on the board."""

from __future__ import annotations

from typing import Any

import pytest

from swarmflow.teams.board import Board
from swarmflow.teams.board_rules import MAX_CONTENT, MAX_MENTIONS
from tests.teams.board_support import call_tool, of_type, on_board

HOSTILE: list[tuple[str, str, dict[str, Any] | str, str]] = [
    (
        "coder",
        "send_message",
        {"thread": "plan", "content": "x" * (MAX_CONTENT + 1)},
        f"at most {MAX_CONTENT}",
    ),
    (
        "lead",
        "send_message",
        {"thread": "plan", "content": "hi", "mentions": [f"a{i}" for i in range(10_000)]},
        f"at most {MAX_MENTIONS}",
    ),
    (
        "lead",
        "send_message",
        {"thread": "plan", "content": "hi", "mentions": ["coder"] * 10_000},
        f"at most {MAX_MENTIONS}",
    ),
    ("lead", "send_message", {"thread": "nowhere", "content": "hi"}, "no thread named 'nowhere'"),
    ("lead", "send_message", {"thread": "plan", "content": "   "}, "cannot be empty"),
    (
        "lead",
        "send_message",
        {"thread": "plan", "content": "hi", "mentions": ["ghost"]},
        "no agent named 'ghost'",
    ),
    (
        "outsider",
        "send_message",
        {"thread": "plan", "content": "let me in"},
        "you do not take part in #plan",
    ),
    ("lead", "create_thread", {"name": "ＰＬＡＮ", "participants": []}, "already exists"),
    ("coder", "create_thread", {"name": "Plan", "participants": ["lead"]}, "already exists"),
    ("lead", "create_thread", {"name": "pl\u200ban", "participants": []}, "U+200B"),
    ("lead", "create_thread", {"name": "a\nb", "participants": []}, "control characters"),
    ("lead", "create_thread", {"name": "#", "participants": []}, "cannot be empty"),
    ("lead", "create_thread", {"name": "n" * 500, "participants": []}, "at most 80"),
    ("lead", "create_thread", {"name": "x", "participants": ["lead", "Ω"]}, "no agent named 'Ω'"),
    ("coder", "wait_for_mention", {"timeout": -1}, "0 or more seconds"),
    ("coder", "wait_for_mention", {"timeout": 1e300}, "too long"),
    ("coder", "wait_for_mention", {"timeout": float("nan")}, "0 or more seconds"),
]


@pytest.mark.parametrize(("sender", "tool", "args", "says"), HOSTILE)
async def test_hostile_arguments_are_refused_clearly(
    sender: str, tool: str, args: dict[str, Any], says: str
) -> None:
    async def body(board: Board) -> Any:
        board.create_thread("lead", "plan", ["coder", "reviewer"])
        before = board.snapshot()
        result = await call_tool(board, sender, tool, args)
        return result, before, board.snapshot(), board.pending("coder")

    result = await on_board(body)
    assert result.status == "ok", result.error
    outcome, before, after, pending = result.output
    assert not outcome.ok
    assert outcome.text.startswith("refused: ")
    assert says in outcome.text
    assert len(outcome.text) < 1_000  # a huge argument is not echoed back whole
    assert after == before and pending == []
    assert of_type(result, "board_message_posted") == []
    (event,) = of_type(result, "board_refused")
    assert event.source == sender


async def test_unicode_names_are_fine_and_reopening_ones_own_thread_is_a_no_op() -> None:
    async def body(board: Board) -> Any:
        made = await call_tool(board, "lead", "create_thread",
                               {"name": "計画 révision", "participants": ["@coder"]})  # fmt: skip
        again = await call_tool(board, "lead", "create_thread",
                                {"name": "計画 RÉVISION", "participants": ["coder"]})  # fmt: skip
        posted = await call_tool(board, "coder", "send_message",
                                 {"thread": "#計画 révision", "content": "ça marche ✓"})  # fmt: skip
        return made, again, posted, board.snapshot("lead")

    result = await on_board(body)
    made, again, posted, view = result.output
    assert made.ok and again.ok and posted.ok, (made.text, again.text, posted.text)
    assert "already exists" in again.text
    (thread,) = view.threads
    assert thread.name == "計画 révision"
    assert [m.content for m in thread.messages] == ["ça marche ✓"]
    assert len(of_type(result, "thread_created")) == 1


async def test_an_unknown_caller_is_refused() -> None:
    async def body(board: Board) -> Any:
        return await call_tool(board, "stranger", "create_thread",
                               {"name": "x", "participants": []})  # fmt: skip

    result = await on_board(body)
    assert not result.output.ok
    assert "no agent named 'stranger'" in result.output.text


async def test_the_tools_refuse_in_a_session_without_a_board() -> None:
    from swarmflow.core.ports import ToolContext
    from swarmflow.tools import default_registry

    ctx = ToolContext(agent="lead", session="s", workspace=None, emit=lambda *a, **k: None)
    result = await default_registry().execute("wait_for_mention", {"timeout": 1}, ctx)
    assert not result.ok
    assert "message board" in result.text
