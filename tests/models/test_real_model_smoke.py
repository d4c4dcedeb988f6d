"""One real-model smoke test in the ordinary suite: a structured answer from SmolLM2 on a real
llama.cpp server, in its JSON-schema mode. Skips unless the `llm` extra is installed; the
fuller set, flows included, is `make test-llm`."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.models import OpenAIModel
from tests.support.llama_server import ServerFailed, Unavailable, gguf_file, llama_server

pytestmark = pytest.mark.allow_model_calls


class Greeting(BaseModel):
    word: str


@flow(team=Team([Agent("greeter")]))
async def greet(name: str) -> Greeting:
    return (await agent("greeter", f"Greet {name} in one word.", output=Greeting)).value


async def test_structured_answer_from_a_real_model(tmp_path: Path) -> None:
    try:
        gguf_file()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        with llama_server(tmp_path) as url:
            async with OpenAIModel("smollm2", base_url=url, timeout=120.0) as model:
                result = await run(greet, model=model, name="Ada")
    except ServerFailed as exc:
        pytest.fail(str(exc))
    assert isinstance(result.output, Greeting)
    called = [e for e in result.events if e.type == "model_called"]
    assert called[0].output_mode == "json_object"
