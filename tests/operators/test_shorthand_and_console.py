"""A declared Agent is callable inside a flow; the console channel reads a person's answer."""

from __future__ import annotations

import io

import pytest

from swarmflow import Agent, ConfigError, Team, flow, human, run
from swarmflow.channels import ConsoleHuman
from swarmflow.testing import FunctionModel

CODER = Agent("coder")


async def test_a_declared_agent_is_callable_inside_a_flow() -> None:
    @flow(team=Team([CODER]))
    async def f(task: str) -> str:
        return (await CODER(task)).text

    result = await run(f, task="hello", model=FunctionModel(lambda r: r.prompt.upper()))
    assert result.output == "HELLO"


def test_calling_an_agent_outside_a_flow_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="inside a running flow"):
        CODER("x")


async def test_console_channel_asks_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("ship it\n"))
    shown = io.StringIO()
    monkeypatch.setattr("sys.stdout", shown)

    @flow
    async def ask() -> object:
        return await human("Approve?", payload={"choice": 1})

    result = await run(ask, model=FunctionModel(lambda r: ""), human=ConsoleHuman(who="alice"))
    assert result.output == "ship it"
    assert "Approve?" in shown.getvalue() and '"choice": 1' in shown.getvalue()
    answered = next(e for e in result.events if e.type == "human_answered")
    assert answered.answered_by == "alice"


async def test_console_channel_reports_closed_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    monkeypatch.setattr("sys.stdout", io.StringIO())

    @flow
    async def ask() -> object:
        return await human("Approve?")

    result = await run(
        ask, model=FunctionModel(lambda r: ""), human=ConsoleHuman(), raise_on_failure=False
    )
    assert result.status == "failed" and "standard input closed" in str(result.error)
