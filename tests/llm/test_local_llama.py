"""OpenAIModel against a real llama.cpp server running SmolLM2-135M (opt-in: `make test-llm`).

The server comes from tests/llm/conftest.py; without the model packages every test here is
skipped. Single requests here; whole flows in test_flows.py.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from swarmflow.core.messages import Message, ModelRequest, OutputSpec, ToolCall, ToolSpec
from swarmflow.models import OpenAIModel

pytestmark = [pytest.mark.llm, pytest.mark.allow_model_calls]

CALL_TIMEOUT = 120.0

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def _model(
    url: str, *, stream: bool = False, force_tool_choice: bool = False, **caps: str
) -> OpenAIModel:
    return OpenAIModel(
        "smollm2",
        base_url=url,
        timeout=CALL_TIMEOUT,
        max_retries=1,
        stream=stream,
        force_tool_choice=force_tool_choice,
        capabilities=caps or None,
    )


ASK = ModelRequest(
    messages=[Message("system", "You are concise."), Message("user", "Say hello in one word.")],
    max_tokens=24,
    temperature=0.0,
)


async def test_plain_completion(llama_url: str) -> None:
    async with _model(llama_url) as model:
        response = await model.complete(ASK)
    assert response.text and response.text.strip()
    assert response.usage.input > 0 and response.usage.output > 0
    assert response.finish_reason in ("stop", "length")


async def test_streamed_completion(llama_url: str) -> None:
    async with _model(llama_url, stream=True) as model:
        response = await model.complete(ASK)
    assert response.text and response.text.strip()
    assert response.usage.input > 0 and response.usage.output > 0


class Answer(BaseModel):
    word: str
    confident: bool


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_answer_in_the_servers_schema_mode(llama_url: str, stream: bool) -> None:
    request = ModelRequest(
        messages=[Message("user", "Say hello as JSON with a word and whether you are sure.")],
        max_tokens=64,
        temperature=0.0,
        output=OutputSpec("Answer", Answer.model_json_schema()),
    )
    retries: list[str] = []
    async with _model(llama_url, stream=stream) as model:
        model.on_retry = lambda n, why, delay: retries.append(why)
        response = await model.complete(request)
        again = await model.complete(request)
    # llama-cpp-python takes the schema as {"type": "json_object", "schema": ...}: found once.
    assert response.output_mode == again.output_mode == "json_object"
    assert len(retries) == 1 and "rejected response_format 'json_schema'" in retries[0]
    Answer.model_validate_json(response.text or "")


@pytest.mark.parametrize("mode", ["json_schema", "named"])
async def test_forced_tool_call_is_made(llama_url: str, mode: str) -> None:
    request = ModelRequest(
        messages=[Message("user", "What is the weather in Paris? Use the tool.")],
        tools=[WEATHER],
        max_tokens=64,
        temperature=0.0,
    )
    async with _model(llama_url, force_tool_choice=True, forced_tools=mode) as model:
        response = await model.complete(request)
    assert [call.name for call in response.tool_calls] == ["get_weather"]
    assert isinstance(response.tool_calls[0].parsed_arguments().get("city"), str)
    assert response.usage.input > 0


async def test_tool_result_turn_is_accepted(llama_url: str) -> None:
    # The assistant turn carries tool calls and no text: llama.cpp rejects null content there.
    call = ToolCall("call_0", "get_weather", '{"city": "Paris"}')
    request = ModelRequest(
        messages=[
            Message("user", "What is the weather in Paris?"),
            Message("assistant", None, tool_calls=(call,)),
            Message("tool", "sunny, 21 C", tool_call_id="call_0"),
        ],
        tools=[WEATHER],
        max_tokens=32,
        temperature=0.0,
    )
    async with _model(llama_url) as model:
        response = await model.complete(request)
    assert response.text or response.tool_calls
    assert response.usage.input > 0
