"""One turn lock per session: `ask` holds it across its re-asks, so no other turn comes between."""

from __future__ import annotations

import anyio
from pydantic import BaseModel

from swarmflow import Agent, agent_session
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import run_one


class Pick(BaseModel):
    choice: int


async def test_a_send_waits_until_an_ask_and_its_re_asks_are_done() -> None:
    seen: list[str] = []
    first_answer_given = anyio.Event()
    release = anyio.Event()

    async def policy(req: ModelRequest) -> str:
        seen.append(req.prompt.split("\n")[0])
        if len(seen) == 1:
            first_answer_given.set()
            await release.wait()
            return "not json"  # forces a re-ask
        return '{"choice": 1}' if seen[-1] != "other" else "noted"

    async def body() -> object:
        async with agent_session("arbiter") as arbiter:
            picked: list[object] = []

            async def ask() -> None:
                picked.append(await arbiter.ask("Pick one.", output=Pick))

            async def send() -> None:
                await first_answer_given.wait()
                sending.set()
                await arbiter.send("other")

            sending = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                tg.start_soon(send)
                await sending.wait()
                release.set()
            return picked[0]

    result = await run_one([Agent("arbiter")], body, FunctionModel(policy))
    assert result.output == Pick(choice=1)
    assert seen[0] == "Pick one." and seen[1].startswith("That answer was not valid")
    assert seen[2] == "other"  # the send ran only after the ask's re-ask
