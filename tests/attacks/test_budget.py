"""Budgets given wrongly are refused with what is wrong, before anything runs: a negative or
NaN amount, a string, a fraction of a call, something that is not a mapping at all."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, ConfigError, Team, agent, flow, parallel, run, team
from swarmflow.testing import FunctionModel

WORKER = Team([Agent("w")])


@flow(team=WORKER)
async def one_call() -> str:
    return (await agent("w", "go")).text


def model() -> FunctionModel:
    return FunctionModel(lambda request: "ok")


@pytest.mark.parametrize(
    ("budget", "says"),
    [
        ({"tokens": -5}, "tokens=-5"),
        ({"tokens": "many"}, "tokens='many'"),
        ({"tokens": float("inf")}, "tokens=inf"),
        ({"calls": 2.7}, "calls=2.7"),
        ({"calls": True}, "calls=True"),
        ({"seconds": float("nan")}, "seconds=nan"),
        ({"seconds": "10"}, "seconds='10'"),
        ({"cost": -1}, "cost=-1"),
        ({"cost": float("nan")}, "cost=nan"),
        (42, "not a mapping"),
        ([1, 2], "not a mapping"),
    ],
)
async def test_a_bad_run_budget_is_refused_naming_it(budget: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
        await run(one_call, model=model(), budget=budget)


async def test_good_budgets_still_pass() -> None:
    for budget in ({"tokens": 10_000.0}, {"seconds": float("inf")}, {"tokens": None}, {}):
        result = await run(one_call, model=model(), budget=budget)
        assert result.output == "ok"


@pytest.mark.parametrize("split", [[-5, 10], [float("nan"), 1], ["a", "b"]])
async def test_a_bad_split_amount_fails_the_run_naming_it(split: list[Any]) -> None:
    @flow(team=WORKER)
    async def split_up() -> object:
        return await parallel(lambda i: agent("w", f"go {i}"), n=2, split=split)

    result = await run(split_up, model=model(), raise_on_failure=False)
    assert isinstance(result.error, ConfigError) and "budget" in str(result.error)


async def test_a_negative_team_limit_is_refused() -> None:
    crew = Team([Agent("lead", tools=["submit"])])

    @flow(team=crew)
    async def with_team() -> object:
        return await team("go", lead="lead", limits=-1)

    result = await run(with_team, model=model(), raise_on_failure=False)
    assert isinstance(result.error, ConfigError) and "tokens=-1" in str(result.error)


@pytest.mark.parametrize(
    "option",
    [{"budget": {"tokens": -1}}, {"prices": {"m": "cheap"}}, {"rails": [42]}, {"goals": {"w": 5}}],
)
async def test_a_bad_option_leaves_no_dead_run_behind(tmp_path: Path, option: Any) -> None:
    with pytest.raises((ConfigError, TypeError, ValueError)):
        await run(one_call, model=model(), runs_root=tmp_path, **option)
    assert not os.listdir(tmp_path)  # no run directory, no open log


async def test_a_budget_thirty_times_the_spend_refuses_no_call_however_many_are_in_flight() -> None:
    """40 branches whose calls all reserve before any settles (each model call waits until
    every branch has called or ended): by whole output allowances they would need 160,000
    tokens at once; each spends about 40, and a budget of 50,000 refuses none of them."""
    import anyio

    from swarmflow import Failed
    from swarmflow.core.messages import ModelRequest, Usage
    from swarmflow.testing import Step

    n = 40
    arrived_or_ended = [0]
    everyone = anyio.Event()

    def count() -> None:
        arrived_or_ended[0] += 1
        if arrived_or_ended[0] >= n:
            everyone.set()

    async def slow(request: ModelRequest) -> Step:
        count()
        await everyone.wait()
        return Step(text="ok", usage=Usage(input=request.estimated_prompt_tokens, output=25))

    @flow(team=WORKER, budget={"tokens": 50_000})
    async def flood() -> object:
        async def branch(i: int) -> str:
            try:
                return (await agent("w", f"item {i}")).text
            except BaseException:
                count()  # refused before calling: stop holding the others back
                raise

        return await parallel(branch, n=n)

    result = await run(flood, model=FunctionModel(slow), raise_on_failure=False)
    refused = [o for o in result.output if isinstance(o, Failed)]
    assert refused == [], refused[0].error
    spent = result.events[-1].tokens
    assert spent * 30 < 50_000
