"""The board under load, at a test's size: many agents and messages over threads, no mention
lost or repeated, every thread and inbox in order (the benchmark's check, benchmarks/cases/
board.py, at 20 agents and 1,000 messages)."""

from __future__ import annotations

from typing import Any

import anyio

from benchmarks.cases.board import exchange, team_of
from swarmflow import flow, run
from swarmflow.testing import FunctionModel


async def test_many_agents_and_messages_keep_order_and_lose_nothing() -> None:
    @flow(team=team_of(20))
    async def traffic() -> Any:
        seen, _ = await exchange(20, 1_000)  # checks loss, repeats and order itself
        return sum(len(inbox) for inbox in seen.taken.values())

    result = await run(traffic, model=FunctionModel(lambda request: "x"), events="jsonl")
    assert result.output == 1_000
    log = await anyio.Path(result.events_path).read_text()
    assert log.count('"type":"mention_delivered"') == 1_000
