"""Routes a value could take past a missing edge that are not prompts: what a tool returns.

The flow's own code can hand an agent's product to a tool (a closure, a file), and another
agent's tool call can bring it back. The handoff rule covers what tools return too: the result
is withheld, the model is told why, and a `handoff_refused` event (via "tool result") records it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmflow import Agent, RunResult, Team, agent, flow, human, run, tool
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call

PRODUCT = "the coder's unique answer 7f3a9c1e2b4d, with a long tail of words to fingerprint"
box: dict[str, str] = {}


@tool
def peek() -> str:
    """What the flow put in the box."""
    return box["x"]


def policy(first_tool: dict[str, Any]) -> FunctionModel:
    def answer(request: ModelRequest) -> Any:
        if request.agent == "coder":
            return PRODUCT
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if not results:
            return tool_call(first_tool.pop("name"), **first_tool)
        return "I saw: " + results[-1]

    return FunctionModel(answer)


def refusals(result: RunResult) -> list[Any]:
    return [e for e in result.events if e.type == "handoff_refused"]


def make_flow(edges: list[tuple[str, str]]) -> Any:
    team = Team([Agent("coder"), Agent("reviewer", tools=[peek])], edges=edges)

    @flow(team=team)
    async def through_a_tool() -> str:
        box["x"] = (await agent("coder", "code")).text
        return (await agent("reviewer", "look in the box")).text

    return through_a_tool


async def test_a_product_handed_over_by_a_tool_is_withheld() -> None:
    result = await run(make_flow([]), model=policy({"name": "peek"}))
    assert result.status == "ok"
    assert PRODUCT not in result.output and "7f3a9c1e2b4d" not in result.output
    assert "no edge coder -> reviewer" in result.output
    (refused,) = refusals(result)
    assert (refused.source, refused.target, refused.via) == ("coder", "reviewer", "tool result")


async def test_the_same_tool_along_a_declared_edge_passes() -> None:
    result = await run(make_flow([("coder", "reviewer")]), model=policy({"name": "peek"}))
    assert result.output == "I saw: " + PRODUCT and refusals(result) == []


READER = Team([Agent("coder"), Agent("reviewer", tools=["read_file"], workspace="local")])


@flow(team=READER)
async def through_a_file(folder: str) -> str:
    text = (await agent("coder", "code")).text
    (Path(folder) / "note.txt").write_text(text)  # the flow's own code writes the product
    return (await agent("reviewer", "read the note")).text


async def test_a_product_written_to_a_file_and_read_back_by_another_agent_is_withheld(
    tmp_path: Path,
) -> None:
    result = await run(through_a_file, folder=str(tmp_path), repo=tmp_path,
                       model=policy({"name": "read_file", "path": "note.txt"}))  # fmt: skip
    assert "7f3a9c1e2b4d" not in result.output and "no edge coder -> reviewer" in result.output
    assert [r.via for r in refusals(result)] == ["tool result"]


SELF = Team([Agent("coder", tools=["write_file", "read_file"], workspace="local")])


@flow(team=SELF)
async def own_work() -> str:
    first = await agent("coder", "write it")
    return (await agent("coder", f"read back what you wrote: {first.text}")).text


async def test_an_agent_reads_back_its_own_product(tmp_path: Path) -> None:
    def answer(request: ModelRequest) -> Any:
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if request.prompt == "write it":
            return tool_call("write_file", path="mine.txt", content=PRODUCT) if not results \
                else PRODUCT  # fmt: skip
        return tool_call("read_file", path="mine.txt") if not results else results[-1]

    result = await run(own_work, model=FunctionModel(answer), repo=tmp_path)
    assert PRODUCT in result.output and refusals(result) == []


# -- a person's answer is the `human` node's product ---------------------------------------------

ANSWER = "a person's long original answer 9c8b7a6f5e4d with plenty of words in it"


def asks_then_hands_on(edges: list[tuple[str, str]]) -> Any:
    @flow(team=Team([Agent("b")], edges=edges))
    async def asks() -> str:
        said = await human("what should b do?")
        return (await agent("b", f"do: {said}")).text

    return asks


def echo(request: ModelRequest) -> str:
    return "b saw: " + request.prompt


async def test_a_persons_answer_reaches_an_agent_only_along_an_edge_from_human() -> None:
    result = await run(asks_then_hands_on([]), model=FunctionModel(echo),
                       human=lambda q, p: ANSWER, raise_on_failure=False)  # fmt: skip
    assert result.status == "failed" and "no edge human -> b" in str(result.error)
    (refused,) = refusals(result)
    assert (refused.source, refused.target, refused.via) == ("human", "b", "prompt")


async def test_with_the_edge_from_human_the_answer_passes() -> None:
    result = await run(asks_then_hands_on([("human", "b")]), model=FunctionModel(echo),
                       human=lambda q, p: ANSWER)  # fmt: skip
    assert result.output == "b saw: do: " + ANSWER
