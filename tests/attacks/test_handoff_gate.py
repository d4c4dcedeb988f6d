"""The handoff gate into a model's context, attacked where text joins a context beside the
flow's own sends: evidence from a shared workspace, and the tools of a harness's request.

A has no edge to B. A's product reaches the shared workspace's `notes.txt` (by `write_file`,
by a write's `intent`, by `run_shell "echo ... > notes.txt"`): B, which read `notes.txt`
before, is told of the change at its next step, and that evidence must be withheld and
recorded (`handoff_refused`) like a refused tool result. A harness that puts the product in
a tool's description, a parameter's description or an enum is refused 403, as it is when the
same text is in a message.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow, parallel, run_sync
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.harnesses import Harness
from swarmflow.testing import FunctionModel, tool_call
from tests.harnesses.programs import command
from tests.runtime.helpers import of_type, run_one

PRODUCT = "The migration plan moves billing to the eu-west-7 cluster on day nine, quietly."
TOOLS = ["read_file", "write_file", "run_shell"]


def _leak(how: str) -> ToolCall:
    if how == "write_file":
        return tool_call("write_file", path="notes.txt", content=PRODUCT + "\n")
    if how == "intent":
        return tool_call("write_file", path="notes.txt", content="tidied\n", intent=PRODUCT)
    return tool_call("run_shell", command=f"echo {shlex.quote(PRODUCT)} > notes.txt")


@pytest.mark.parametrize("how", ["write_file", "intent", "run_shell"])
async def test_a_product_written_to_a_shared_file_never_reaches_an_agent_without_the_edge(
    tmp_path: Path, how: str
) -> None:
    (tmp_path / "notes.txt").write_text("nothing yet\n")
    b_read, a_wrote = anyio.Event(), anyio.Event()

    async def policy(request: ModelRequest) -> Any:
        mine = [r for r in model.requests if r.agent == request.agent]
        if request.agent == "A":
            if request.prompt == "make":
                return PRODUCT
            if len(mine) == 2:  # its second call: a writer reads first
                return tool_call("read_file", path="notes.txt")
            if len(mine) == 3:
                await b_read.wait()
                return _leak(how)
            a_wrote.set()
            return "A done"
        if len(mine) == 1:
            return tool_call("read_file", path="notes.txt")
        if len(mine) == 2:
            b_read.set()
            await a_wrote.wait()  # A writes while this call is in flight
            return tool_call("read_file", path="missing.txt")
        return "B done"

    model = FunctionModel(policy)

    async def body() -> Any:
        await agent("A", "make")  # the product: A's, from here on
        return await parallel(agent("A", "leak"), agent("B", "read"))

    agents = [Agent(n, tools=TOOLS, workspace="shared", sandbox="none") for n in "AB"]
    result = await run_one(agents, body, model, repo=tmp_path)
    assert result.status == "ok", result.error
    seen = [m.content or "" for r in model.requests if r.agent == "B" for m in r.messages]
    assert not [text for text in seen if "eu-west-7 cluster" in text]
    refused = [e for e in of_type(result, "handoff_refused") if e.target == "B"]
    assert refused and all(e.source == "A" and e.via.startswith("evidence") for e in refused)


@pytest.mark.parametrize("where", ["description", "parameter", "enum"])
def test_a_product_in_a_harness_tool_is_refused_at_the_endpoint(tmp_path: Path, where: str) -> None:
    notes = tmp_path / "shared"
    notes.mkdir()
    leaker = Agent("leaker", workspace="local", sandbox="none",
                   harness=Harness(command=command("leak_in_tool", "notes.txt", where),
                                   task="stdin"))  # fmt: skip
    asked: list[str] = []

    def policy(request: ModelRequest) -> str:
        asked.append(request.agent)
        return PRODUCT

    @flow(team=Team([Agent("writer"), leaker]))
    async def launder() -> str:
        written = await agent("writer", "write the plan")
        (notes / "notes.txt").write_text(written.text)  # handed over through a file
        return (await agent("leaker", "use your tool", workspace=notes)).text

    result = run_sync(launder, model=FunctionModel(policy))
    assert result.output.startswith("status 403: refused to hand a value from 'writer'")
    assert asked == ["writer"]  # nothing of the leaker's reached the model
    (refused,) = of_type(result, "handoff_refused")
    assert (refused.source, refused.target, refused.via) == ("writer", "leaker", "harness request")
