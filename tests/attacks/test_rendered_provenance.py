"""A product the flow's own code puts into a string keeps its origin, whatever its length.

A researcher's answer that echoes its question ("Paris is the capital of France.") has almost
nothing of its own for the copy match to find, and a one-word answer has nothing at all: the
refusal must not depend on which one the model gave. Every route the flow's code may take to
build the judge's prompt is tried with a short, an echoing and a long answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from swarmflow import Agent, AgentOutput, Team, agent, flow, run
from swarmflow.core.errors import TopologyError
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel

ANSWERS = {
    "short": "Paris.",
    "echo": "Paris is the capital of France.",
    "long": "Paris is the capital of France, and has been since the tenth century, give or take.",
}

Build = Callable[[list[AgentOutput]], str]
ROUTES: dict[str, Build] = {
    "f-string": lambda outs: "\n".join(f"Answer {k}: {a.text}" for k, a in enumerate(outs)),
    "f-string of the output": lambda outs: "; ".join(f"{a}" for a in outs),
    "format spec": lambda outs: " ".join(f"{a.text:>40}" for a in outs),
    "str.format": lambda outs: " ".join("Answer: {}".format(a.text) for a in outs),  # noqa: UP032
    "percent": lambda outs: " ".join("Answer: %s" % (a.text,) for a in outs),  # noqa: UP031
    "plus": lambda outs: "Answers: " + outs[0].text + " and more",
    "repr": lambda outs: f"Answers: {[a.text for a in outs]!r}",
    "str()": lambda outs: "Answers: " + " ".join(str(a) for a in outs),
}


def make_flow(build: Build, edges: list[tuple[str, str]]) -> Any:
    team = Team([Agent("researcher"), Agent("judge")], edges=edges)

    @flow(team=team)
    async def researchers_and_judge() -> str:
        question = "What is the capital of France?"
        answers = [await agent("researcher", question)]
        return (await agent("judge", build(answers))).text

    return researchers_and_judge


def model(answer: str) -> FunctionModel:
    def reply(request: ModelRequest) -> str:
        return answer if request.agent == "researcher" else "the first one"

    return FunctionModel(reply)


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("length", sorted(ANSWERS))
async def test_a_missing_edge_is_refused_whatever_the_answer(route: str, length: str) -> None:
    result = await run(
        make_flow(ROUTES[route], []), model=model(ANSWERS[length]), raise_on_failure=False
    )
    assert result.status == "failed"
    assert isinstance(result.error, TopologyError)
    assert (result.error.source, result.error.target) == ("researcher", "judge")
    (refused,) = [e for e in result.events if e.type == "handoff_refused"]
    assert (refused.source, refused.target) == ("researcher", "judge")


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("length", sorted(ANSWERS))
async def test_with_the_edge_every_route_passes(route: str, length: str) -> None:
    result = await run(
        make_flow(ROUTES[route], [("researcher", "judge")]), model=model(ANSWERS[length])
    )
    assert result.status == "ok", result.error
    assert result.output == "the first one"


async def test_a_joined_answer_that_echoes_its_question_is_still_the_researchers() -> None:
    def joined(outs: list[AgentOutput]) -> str:
        return "\n".join(a.text for a in outs)

    result = await run(make_flow(joined, []), model=model(ANSWERS["echo"]), raise_on_failure=False)
    assert isinstance(result.error, TopologyError)


async def test_the_question_alone_may_reach_the_judge() -> None:
    """The researcher's rendered answer is the researcher's; the task it was given is not."""

    def question_only(outs: list[AgentOutput]) -> str:
        _ = f"{outs[0].text}"  # rendered, and not passed on
        return "What is the capital of France? Say it in one word."

    result = await run(make_flow(question_only, []), model=model(ANSWERS["echo"]))
    assert result.status == "ok", result.error


async def test_a_short_answer_inside_another_word_is_not_a_copy() -> None:
    def unrelated(outs: list[AgentOutput]) -> str:
        _ = f"{outs[0].text}"
        return "Reply with the word Yesterday."

    result = await run(make_flow(unrelated, []), model=model("Yes"))
    assert result.status == "ok", result.error


class Pick(BaseModel):
    choice: int
    reason: str
    notes: list[str] = []


@flow(team=Team([Agent("judge"), Agent("writer")]))
async def pick_then_write() -> str:
    pick = (await agent("judge", "Pick one.", output=Pick)).value
    return (await agent("writer", f"Write up: {pick.reason} ({pick.notes[0]})")).text


@pytest.mark.parametrize("reason", ["Smaller.", "The smaller one breaks nothing and is tested."])
async def test_a_structured_answers_fields_keep_their_origin(reason: str) -> None:
    def reply(request: ModelRequest) -> str:
        return json.dumps({"choice": 0, "reason": reason, "notes": ["ok"]})

    result = await run(pick_then_write, model=FunctionModel(reply), raise_on_failure=False)
    assert isinstance(result.error, TopologyError)
    assert (result.error.source, result.error.target) == ("judge", "writer")
