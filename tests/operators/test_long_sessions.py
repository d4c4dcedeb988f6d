"""The handoff rule holds deep into a long session: each turn reads only what is new, and
still refuses a smuggled product and still frees what the flow gave the agent."""

from __future__ import annotations

from swarmflow import Agent, AgentOutput, TopologyError, agent, agent_session
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import of_type, run_one

TEAM = [Agent("coder"), Agent("reviewer"), Agent("arbiter")]
EDGES = [("coder", "reviewer"), ("reviewer", "arbiter")]
CODE = "def add(a, b): return a - b  # the bug is right here in this line"
TASK = "Implement the subtract function so that every calculator test passes"
TURNS = 500


def _policy(req: ModelRequest) -> str:
    if req.agent == "coder":
        return CODE
    if req.agent == "reviewer":
        # Echoes the task of its first turn on its last one, with a verdict of its own.
        if "last" in req.prompt:
            return f"The task was: {TASK}. My verdict: the helper_cache_size rename is wrong"
        return f"noted {req.prompt}"
    return "ok"


async def test_a_product_smuggled_on_turn_500_is_refused() -> None:
    async def body() -> object:
        code = await agent("coder", "write add")
        async with agent_session("arbiter") as session:
            for i in range(TURNS - 1):
                await session.send(f"turn {i}: keep the ledger of the discussion up to date")
            return await session.send(f"turn {TURNS}: also consider {code.text}")

    model = FunctionModel(_policy)
    result = await run_one(TEAM, body, model, edges=EDGES)
    assert isinstance(result.error, TopologyError), result.error
    assert (result.error.source, result.error.target) == ("coder", "arbiter")
    assert len([r for r in model.requests if r.agent == "arbiter"]) == TURNS - 1
    refusal = of_type(result, "handoff_refused")[0]
    assert (refusal.source, refusal.via) == ("coder", "session message")


async def test_a_task_given_on_turn_1_and_echoed_on_turn_500_stays_free() -> None:
    """The reviewer's last answer repeats the task it was given 499 turns before: the flow may
    still send the task to the arbiter, which has no edge from the reviewer's own words."""

    async def body() -> str:
        echo = await _long_review()
        assert TASK in echo.text
        return (await agent("arbiter", f"Please do this: {TASK}")).text

    result = await run_one(TEAM, body, FunctionModel(_policy), edges=[])
    assert result.status == "ok", result.error
    assert result.output == "ok"


async def test_the_reviewers_own_words_on_turn_500_are_still_its_own() -> None:
    """The same answer pasted whole to an agent without the edge: the verdict is the
    reviewer's, so it is refused."""

    async def body() -> str:
        echo = await _long_review()
        return (await agent("coder", f"From review: {echo.text}")).text

    result = await run_one(TEAM, body, FunctionModel(_policy), edges=[])
    assert isinstance(result.error, TopologyError), result.error
    assert (result.error.source, result.error.target) == ("reviewer", "coder")


async def _long_review() -> AgentOutput:
    """A reviewer session of TURNS turns whose last answer repeats the task of its first."""
    async with agent_session("reviewer") as session:
        await session.send(TASK)
        for i in range(1, TURNS - 1):
            await session.send(f"turn {i}: go on with the review of the next file")
        return await session.send("the last turn: say what the task was")
