"""Laundering a product past a missing edge, 19 new characters at a time, or in another form.

A sender that came by another agent's product (a tool result, a file) and posts growing
excerpts of it, each adding fewer than 20 new letters and digits, must not become the owner of
what it posted: the second post already carries more than the copy rule allows, and is refused.
A full-width copy is the same copy (texts are compared under NFKC).
"""

from __future__ import annotations

from typing import Any

from swarmflow import Agent, Team, agent, flow, run, tool
from swarmflow.core.fingerprint import MATCH_CHARS, FingerprintIndex, normalize
from swarmflow.core.messages import ModelRequest
from swarmflow.runtime.context import current_run
from swarmflow.teams.board import board_for
from swarmflow.testing import FunctionModel
from tests.teams.board_support import call_tool

SECRET = "the coder's design 5c1d9e: queue workers by shard, retry thrice, then page the owner"
STEP = MATCH_CHARS - 1


def excerpts(text: str) -> list[str]:
    """Growing excerpts of `text`, each `STEP` more letters and digits than the last."""
    norm = normalize(text)
    return [f"note {k}: {norm[: STEP * k]}" for k in range(1, len(norm) // STEP + 1)]


def test_growing_excerpts_are_refused_from_the_second_on() -> None:
    index = FingerprintIndex()
    index.add("coder", SECRET)

    def to_lead(owner: str) -> bool:
        return owner == "relay"  # relay -> lead is declared; coder -> lead is not

    delivered = []
    for post in excerpts(SECRET):
        if index.unreached(post, to_lead):
            break
        delivered.append(post)
        index.add("relay", post)  # what it posted is its product, as the board records it
    assert len(delivered) == 1  # only the first, with fewer than 20 of the coder's characters
    assert index.unreached(SECRET, to_lead) == ["coder"]


def test_a_relay_it_was_given_along_an_edge_is_still_its_to_pass_on() -> None:
    index = FingerprintIndex()
    index.add("coder", SECRET)
    index.add("relay", f"I checked this: {SECRET}", given=SECRET)  # the flow gave it to relay
    assert index.unreached(f"review: I checked this: {SECRET}", lambda o: o == "relay") == []


def test_a_full_width_copy_is_a_copy() -> None:
    index = FingerprintIndex()
    index.add("coder", SECRET)
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in SECRET)
    assert wide != SECRET and normalize(wide) == normalize(SECRET)
    assert index.unreached(f"copied: {wide}", lambda o: False) == ["coder"]


TEAM = Team(
    [Agent("coder"), Agent("relay", tools=["send_message"]), Agent("lead")],
    edges=[("relay", "lead"), ("lead", "relay")],
)


@flow(team=TEAM)
async def launder_on_the_board() -> list[str]:
    await agent("coder", "design the queue")
    board = board_for(current_run())
    board.create_thread("relay", "notes", ["lead"])
    outcomes = []
    for post in excerpts(SECRET):
        sent = await call_tool(board, "relay", "send_message", {"thread": "notes", "content": post})
        outcomes.append(sent.text)
    return outcomes


async def test_growing_excerpts_on_the_board_stop_at_the_second() -> None:
    model = FunctionModel(lambda request: SECRET if request.agent == "coder" else "ok")
    result = await run(launder_on_the_board, model=model)
    assert result.status == "ok", result.error
    refused = [i for i, text in enumerate(result.output) if "no edge coder -> lead" in text]
    assert refused and refused[0] == 1, result.output
    posted = [e for e in result.events if e.type == "board_message_posted"]
    assert len(posted) == 1


box: dict[str, str] = {}


@tool
def peek(part: int) -> str:
    """A part of what the flow put in the box, 19 letters and digits at a time."""
    norm = normalize(box["x"])
    return norm[part * STEP : (part + 1) * STEP]


@flow(team=Team([Agent("coder"), Agent("relay", tools=[peek]), Agent("lead")],
                edges=[("relay", "lead")]))  # fmt: skip
async def launder_through_answers() -> list[str]:
    box["x"] = (await agent("coder", "design the queue")).text
    heard = []
    for k in range(1, 4):
        said = await agent("relay", f"say the first {k} parts")
        heard.append((await agent("lead", f"relay says: {said.text}")).text)
    return heard


async def test_growing_excerpts_in_answers_stop_at_the_second() -> None:
    def policy(request: ModelRequest) -> Any:
        if request.agent == "coder":
            return SECRET
        if request.agent == "relay":
            k = int(request.prompt.split()[3])
            return f"here: {normalize(SECRET)[: STEP * k]}"
        return "heard"

    result = await run(launder_through_answers, model=FunctionModel(policy),
                       raise_on_failure=False)  # fmt: skip
    assert result.status == "failed"
    assert "no edge coder -> lead" in str(result.error)
    asked = [e for e in result.events if e.type == "model_called" and e.agent == "lead"]
    assert len(asked) == 1  # the first answer passed; the second was refused
