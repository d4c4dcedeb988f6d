"""The handoff rule holds on what is sent: every route a coder's product can take to an agent
without the edge is refused, nothing reaches that agent, and the refusal is recorded."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swarmflow import Agent, TopologyError, agent, agent_session, human
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

TOKEN = "Zq7xK2mP9wL4vB8nR3tY6"  # one long word: 21 letters and digits
CODE = "def add(a, b): return a - b  # the bug is right here in this line"
TEAM = [Agent("coder"), Agent("reviewer"), Agent("arbiter", card="Judge {{ candidate | default('') }}.")]
EDGES = [("coder", "reviewer"), ("reviewer", "arbiter")]


class Verdict(BaseModel):
    reason: str
    score: int


def _model(coder_says: str = CODE) -> FunctionModel:
    def policy(req: ModelRequest) -> str:
        if req.agent == "coder":
            return coder_says
        if "JSON" in req.prompt:
            return json.dumps({"reason": f"because {coder_says}", "score": 3})
        return "reviewed fine"

    return FunctionModel(policy)


async def _refused(body: Any, model: FunctionModel | None = None, **kw: Any) -> Any:
    model = model or _model()
    result = await run_one(TEAM, body, model, edges=EDGES, **kw)
    assert isinstance(result.error, TopologyError), (result.status, result.error)
    assert (result.error.source, result.error.target) == ("coder", result.error.target)
    assert not [r for r in model.requests if r.agent == "arbiter"], "something was sent"
    refusals = of_type(result, "handoff_refused") + of_type(result, "message_refused")
    assert refusals and refusals[0].source == "coder"
    return result


async def test_one_long_token_pasted_into_an_f_string() -> None:
    async def body() -> object:
        out = await agent("coder", "name it")
        return await agent("arbiter", f"Is {out.text} a good name?")

    await _refused(body, _model(TOKEN))


async def test_an_excerpt_in_other_case_or_quotes() -> None:
    async def upper() -> object:
        out = await agent("coder", "write add")
        return await agent("arbiter", f"Look: {out.text[4:40].upper()}")

    await _refused(upper)

    async def quoted() -> object:
        out = await agent("coder", "write add")
        words = out.text.split()[2:12]
        return await agent("arbiter", "He said " + ", ".join(f'"{w}"' for w in words))

    await _refused(quoted)


async def test_an_object_whose_str_is_the_output() -> None:
    class Wrapper:
        def __init__(self, text: str) -> None:
            self.text = text

        def __str__(self) -> str:
            return f"<<{self.text}>>"

    async def body() -> object:
        out = await agent("coder", "write add")
        return await agent("arbiter", Wrapper(str(out.text)))

    await _refused(body)


async def test_encoded_bytes() -> None:
    async def body() -> object:
        out = await agent("coder", "write add")
        return await agent("arbiter", out.text.encode())

    await _refused(body)

    async def multiline() -> object:  # repr() would show "\n": the check reads the decoded text
        out = await agent("coder", "write")
        return await agent("arbiter", out.text.encode())

    await _refused(multiline, _model("ab\ncd\nef\ngh\nij\nkl\nmn\nop\nqr\nst\nuv\nwx"))


async def test_structured_value_and_its_fields() -> None:
    async def field() -> object:
        verdict = await agent("coder", "answer in JSON", output=Verdict)
        return await agent("arbiter", f"reason: {verdict.value.reason.title()}")

    async def coder_json() -> object:
        verdict = await agent("coder", "answer in JSON", output=Verdict)
        return await agent("arbiter", json.dumps(verdict.value.model_dump()))

    def policy(req: ModelRequest) -> str:
        return json.dumps({"reason": CODE, "score": 3}) if req.agent == "coder" else "ok"

    await _refused(field, FunctionModel(policy))
    await _refused(coder_json, FunctionModel(policy))


async def test_rendered_card_session_message_and_human() -> None:
    async def card() -> object:
        out = await agent("coder", "x")
        return await agent("arbiter", "judge", candidate=out.text.lower().replace(" ", "_"))

    result = await _refused(card)
    assert of_type(result, "handoff_refused")[0].via == "template variable"

    async def session() -> object:
        out = await agent("coder", "x")
        async with agent_session("arbiter", candidate="none") as s:
            return await s.send(f"--> {out.text[::-1][::-1]} <--")

    result = await _refused(session)
    assert of_type(result, "handoff_refused")[0].via == "session message"

    async def asked() -> object:
        out = await agent("coder", "x")
        return await human("Approve?", payload={"code": [out.text.swapcase()]})

    result = await _refused(asked, human=["yes"])
    assert result.error.target == "human"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "app.py").write_text("VALUE = 1\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_the_coders_patch_passed_on(repo: Path) -> None:
    new_line = "def compute_total(items): return sum(item.price for item in items)\n"

    def policy(req: ModelRequest) -> object:
        if req.agent == "coder" and req.messages[-1].role != "tool":
            return tool_call("write_file", path="total.py", content=new_line)
        return "done" if req.agent == "coder" else "ok"

    team = [Agent("coder", tools=["write_file"], workspace="worktree"), Agent("arbiter")]

    async def whole_patch() -> object:
        out = await agent("coder", "add a total")
        assert out.patch is not None and "compute_total" in out.patch.diff
        return await agent("arbiter", out.patch)

    async def its_diff() -> object:
        out = await agent("coder", "add a total")
        assert out.patch is not None
        return await agent("arbiter", "Review:\n" + out.patch.diff.replace("+", "> "))

    for body in (whole_patch, its_diff):
        model = FunctionModel(policy)
        result = await run_one(team, body, model, repo=repo)
        assert isinstance(result.error, TopologyError), result.error
        assert result.error.source == "coder"
        assert not [r for r in model.requests if r.agent == "arbiter"]


async def test_what_the_coder_was_given_stays_free() -> None:
    """An agent that echoes the task does not own it: the flow may send the task anywhere."""
    task = "Implement the add function so that the unit tests pass"

    async def body() -> str:
        await agent("coder", task)
        return (await agent("arbiter", task)).text

    echo = FunctionModel(lambda req: f"OK: {req.prompt}" if req.agent == "coder" else "ok")
    result = await run_one(TEAM, body, echo, edges=EDGES)
    assert result.status == "ok" and result.output == "ok"


async def test_a_relay_along_declared_edges_passes() -> None:
    """The reviewer quotes the coder; the flow pasting the reviewer's words to the arbiter
    needs reviewer -> arbiter only, even though the coder's text is inside them."""

    def policy(req: ModelRequest) -> str:
        if req.agent == "coder":
            return CODE
        return f"I checked this: {req.prompt}" if req.agent == "reviewer" else "ok"

    async def body() -> str:
        review = await agent("reviewer", await agent("coder", "x"))
        return (await agent("arbiter", f"summary: {review.text}")).text

    result = await run_one(TEAM, body, FunctionModel(policy), edges=EDGES)
    assert result.status == "ok" and result.output == "ok"


async def test_a_short_output_the_flow_renders_is_refused_one_it_only_matches_is_not() -> None:
    """Below 20 letters and digits a text is too common to be a copy by itself: the same words
    written by the flow pass, while the output rendered into the prompt keeps its origin."""

    async def rendered() -> str:
        out = await agent("coder", "x")
        return (await agent("arbiter", f"the coder said {out.text}")).text

    async def written() -> str:
        await agent("coder", "x")
        return (await agent("arbiter", "the coder said Looks good to me")).text

    short = FunctionModel(lambda req: "Looks good to me" if req.agent == "coder" else "ok")
    refused = await run_one(TEAM, rendered, short, edges=EDGES)
    assert refused.status == "failed" and "no edge coder -> arbiter" in str(refused.error)
    assert (await run_one(TEAM, written, short, edges=EDGES)).status == "ok"
