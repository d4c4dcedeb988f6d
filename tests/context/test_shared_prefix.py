"""Sessions of one agent share their prompts' longest prefix: the card's shared part, the tool
schemas and the task come first, then what is particular to the session; the report shows
the share beside the per-session reuse (the flagship's coders: tests/flows)."""

from __future__ import annotations

from swarmflow import Agent, agent, parallel
from swarmflow.record.events import ModelCalled
from swarmflow.report import digest
from swarmflow.report.text import render_report
from swarmflow.sessions.layout import BRANCH_MARK, split_card
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import run_one


async def test_a_card_without_the_mark_is_sent_whole_and_the_report_shows_the_share() -> None:
    card = "You review code.\n" + BRANCH_MARK + "\nYou are reviewer {{ index }}."
    assert split_card("no mark here") == ("no mark here", "")
    assert split_card(card) == ("You review code.", "You are reviewer {{ index }}.")
    model = FunctionModel(lambda request: "ok")
    team = [Agent("r", card=card, tools=["read_file"], workspace="none")]

    async def body() -> list[str]:
        outs = await parallel(lambda i: agent("r", "review the change", index=i), n=3)
        return [o.value.text for o in outs]

    result = await run_one(team, body, model)
    assert result.status == "ok"
    calls = [e for e in result.events if isinstance(e, ModelCalled)]
    assert [c.shared_prefix_tokens > 0 for c in calls] == [False, True, True]
    spend = digest(result.events).by_agent()["r"]
    assert spend.cross_share is not None and spend.cross_share > 0.5
    report = render_report(result.events)
    assert "across sessions" in report
    assert model.requests[0].messages[2].content == "You are reviewer 0."
