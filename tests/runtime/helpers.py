"""Small helpers for runtime tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from swarmflow import Agent, RunResult, Team, flow, run
from swarmflow.record.events import EventBase


async def run_one(
    agents: list[Agent],
    body: Callable[[], Awaitable[Any]],
    model: Any,
    edges: list[tuple[str, str]] | None = None,
    **kwargs: Any,
) -> RunResult:
    """Run `body` as a flow over a team of `agents`."""

    @flow(team=Team(agents, edges=edges or []))
    async def f() -> Any:
        return await body()

    kwargs.setdefault("raise_on_failure", False)  # the tests read failures off the result
    return await run(f, model=model, **kwargs)


def of_type(result: RunResult, kind: str) -> list[Any]:
    return [e for e in result.events if e.type == kind]


def types(events: list[EventBase]) -> list[str]:
    return [e.type for e in events]
