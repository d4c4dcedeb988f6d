"""OpenAIModel against a real loopback HTTP server speaking the chat-completions wire format."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from swarmflow.core.errors import (
    ContextLengthExceeded,
    ModelAuthError,
    ModelError,
    ModelNotFound,
    ModelResponseError,
    ModelUnavailable,
)
from swarmflow.core.messages import Message, Model, ModelRequest, ToolCall, ToolSpec, Usage
from swarmflow.models import OpenAIModel
from swarmflow.models._retry import BACKOFF_CAP, backoff_delay, retry_after_seconds
from tests.models.conftest import SECRET_KEY, MakeModel
from tests.support.chat_server import (
    ChatServer,
    chunk,
    completion,
    error_reply,
    json_reply,
    raw_reply,
    sse_reply,
    stream_text,
    usage,
    usage_chunk,
    wire_call,
)

pytestmark = pytest.mark.allow_model_calls

READ = ToolSpec(
    "read_file",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
HELLO = ModelRequest(messages=[Message("system", "be brief"), Message("user", "say hello")])
WITH_TOOLS = ModelRequest(messages=[Message("user", "read a.py")], tools=[READ])


# Plain completions -----------------------------------------------------------------------------


async def test_plain_completion_with_usage_and_cached_tokens(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion("hello there", usage=usage(120, 7, cached=100)))
    model = make_model()

    response = await model.complete(HELLO)

    assert isinstance(model, Model)
    assert response.text == "hello there"
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input=120, output=7, cached_input=100)
    assert response.model == "test-model"
    sent = chat_server.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET_KEY}"
    assert sent.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "say hello"},
        ],
        "max_tokens": 4096,
    }


async def test_usage_without_cached_details_counts_zero_cached(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion("x", usage=usage(3, 2)))
    response = await make_model().complete(HELLO)
    assert response.usage == Usage(3, 2, 0)


async def test_request_fields_model_override_temperature_and_extra_body(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion("ok", usage=usage()))
    model = make_model(extra_body={"top_k": 20, "seed": 7})
    request = ModelRequest(
        messages=[Message("user", "hi", name="ann")], model="other", max_tokens=64, temperature=0.2
    )

    await model.complete(request)

    body = chat_server.last
    assert body["model"] == "other"
    assert body["max_tokens"] == 64
    assert body["temperature"] == 0.2
    assert body["top_k"] == 20 and body["seed"] == 7
    assert body["messages"] == [{"role": "user", "content": "hi", "name": "ann"}]
    assert "tools" not in body and "tool_choice" not in body


async def test_missing_usage_in_plain_body_is_estimated(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion("some answer text"))
    response = await make_model().complete(HELLO)
    assert response.usage.input > 0 and response.usage.output > 0


@pytest.mark.parametrize(
    ("wire", "expected"),
    [("length", "length"), ("content_filter", "content_filter"), ("eos_token", "stop")],
)
async def test_finish_reason_mapping(
    chat_server: ChatServer, make_model: MakeModel, wire: str, expected: str
) -> None:
    chat_server.script(completion("x", usage=usage(), finish_reason=wire))
    response = await make_model().complete(HELLO)
    assert response.finish_reason == expected


# Tools -----------------------------------------------------------------------------------------


async def test_tool_call_round_trip(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(
        completion(
            None, tool_calls=[wire_call("read_file", '{"path": "a.py"}', "call_x1")], usage=usage()
        ),
        completion("a.py holds one line", usage=usage()),
    )
    model = make_model()

    first = await model.complete(WITH_TOOLS)

    assert first.finish_reason == "tool_calls"
    assert first.text is None
    assert first.tool_calls == (ToolCall("call_x1", "read_file", '{"path": "a.py"}'),)
    sent = chat_server.last
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": READ.description,
                "parameters": READ.parameters,
            },
        }
    ]
    assert sent["tool_choice"] == "auto"

    history = [
        *WITH_TOOLS.messages,
        Message("assistant", None, tool_calls=first.tool_calls),
        Message("tool", "print('hi')", tool_call_id="call_x1", name="read_file"),
    ]
    second = await model.complete(ModelRequest(messages=history, tools=[READ]))

    assert second.text == "a.py holds one line"
    assistant, tool = chat_server.last["messages"][1:]
    # llama.cpp answers 500 to null content on a tool-call turn: the adapter must send "".
    assert assistant == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_x1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
        ],
    }
    assert tool == {"role": "tool", "content": "print('hi')", "tool_call_id": "call_x1"}


async def test_broken_tool_arguments_are_kept_raw(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        completion(None, tool_calls=[wire_call("read_file", '{"path": "a.py"')], usage=usage())
    )
    response = await make_model().complete(WITH_TOOLS)
    assert response.tool_calls[0].arguments == '{"path": "a.py"'


async def test_missing_call_ids_and_object_arguments(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    calls = [
        {"type": "function", "function": {"name": "read_file", "arguments": {"path": "a"}}},
        {"type": "function", "function": {"name": "read_file", "arguments": {"path": "b"}}},
    ]
    chat_server.script(completion(None, tool_calls=calls, usage=usage(), finish_reason="stop"))

    response = await make_model().complete(WITH_TOOLS)

    assert [c.id for c in response.tool_calls] == ["call_0", "call_1"]
    assert [c.parsed_arguments() for c in response.tool_calls] == [{"path": "a"}, {"path": "b"}]
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("force", "choice", "expected"),
    [
        (True, "auto", "required"),
        (False, "required", "required"),
        (True, "none", "none"),
        (False, "read_file", {"type": "function", "function": {"name": "read_file"}}),
    ],
)
async def test_tool_choice_on_the_wire(
    chat_server: ChatServer, make_model: MakeModel, force: bool, choice: str, expected: object
) -> None:
    chat_server.script(completion("ok", usage=usage()))
    request = ModelRequest(messages=WITH_TOOLS.messages, tools=[READ], tool_choice=choice)
    model = make_model(force_tool_choice=force, capabilities={"forced_tools": "required"})
    await model.complete(request)
    assert chat_server.last["tool_choice"] == expected


async def test_force_tool_choice_without_tools_sends_no_tool_fields(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion("ok", usage=usage()))
    await make_model(force_tool_choice=True).complete(HELLO)
    assert "tool_choice" not in chat_server.last and "tools" not in chat_server.last


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "read_file", "arguments": {"path": "a.py"}}',
        '```json\n{"name": "read_file", "parameters": {"path": "a.py"}}\n```',
        'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n'
        "</tool_call>",
        '[{"type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": '
        '\\"a.py\\"}"}}]',
    ],
)
async def test_tool_call_written_in_content_is_parsed(
    chat_server: ChatServer, make_model: MakeModel, content: str
) -> None:
    chat_server.script(completion(content, usage=usage()))

    response = await make_model().complete(WITH_TOOLS)

    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert (call.id, call.name, call.parsed_arguments()) == (
        "call_0",
        "read_file",
        {"path": "a.py"},
    )
    assert response.finish_reason == "tool_calls"
    assert response.text in (None, "Let me look.")


@pytest.mark.parametrize(
    ("content", "tools"),
    [
        ('{"name": "delete_everything", "arguments": {}}', [READ]),  # not an offered tool
        ('{"name": "read_file", "arguments": {"path": "a.py"}}', []),  # no tools offered
        ('{"answer": 42}', [READ]),
    ],
)
async def test_json_content_that_is_not_a_tool_call_stays_text(
    chat_server: ChatServer, make_model: MakeModel, content: str, tools: list[ToolSpec]
) -> None:
    chat_server.script(completion(content, usage=usage()))
    response = await make_model().complete(ModelRequest(messages=HELLO.messages, tools=tools))
    assert response.tool_calls == ()
    assert response.text == content


# Streaming -------------------------------------------------------------------------------------


async def test_stream_text_with_usage(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(
        stream_text(
            ["Hel", "lo", " world"], with_usage={"prompt": 30, "completion": 3, "cached": 16}
        )
    )

    response = await make_model(stream=True).complete(HELLO)

    assert response.text == "Hello world"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(30, 3, 16)
    assert chat_server.last["stream"] is True
    assert chat_server.last["stream_options"] == {"include_usage": True}


async def test_stream_tool_call_deltas(chat_server: ChatServer, make_model: MakeModel) -> None:
    def call_delta(index: int, **fields: Any) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": index, **fields}]})

    chat_server.script(
        sse_reply(
            [
                chunk({"role": "assistant", "content": None}),
                call_delta(
                    0, id="call_a", type="function", function={"name": "read_file", "arguments": ""}
                ),
                call_delta(0, function={"arguments": '{"pa'}),
                call_delta(
                    1,
                    id="call_b",
                    type="function",
                    function={"name": "read_file", "arguments": '{"path"'},
                ),
                call_delta(0, function={"arguments": 'th": "a.py"}'}),
                call_delta(1, function={"arguments": ': "b.py"}'}),
                chunk({}, "tool_calls"),
                usage_chunk(prompt=50, completion=20),
            ]
        )
    )

    response = await make_model(stream=True).complete(WITH_TOOLS)

    assert response.tool_calls == (
        ToolCall("call_a", "read_file", '{"path": "a.py"}'),
        ToolCall("call_b", "read_file", '{"path": "b.py"}'),
    )
    assert response.text is None
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(50, 20, 0)


async def test_stream_tool_calls_without_index(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    # Some servers send each call whole, with an id but no index.
    whole = [
        {"id": f"call_{c}", "type": "function",
         "function": {"name": "read_file", "arguments": f'{{"path": "{c}"}}'}}
        for c in "ab"
    ]  # fmt: skip
    chat_server.script(
        sse_reply(
            [
                chunk({"tool_calls": [whole[0]]}),
                chunk({"tool_calls": [whole[1]]}),
                chunk({}, "stop"),
            ]
        )  # fmt: skip
    )
    response = await make_model(stream=True).complete(WITH_TOOLS)
    assert [(c.id, c.arguments) for c in response.tool_calls] == [
        ("call_a", '{"path": "a"}'),
        ("call_b", '{"path": "b"}'),
    ]
    assert response.finish_reason == "tool_calls"


async def test_stream_without_usage_is_estimated(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(stream_text(["a fairly long ", "answer to estimate"]))

    response = await make_model(stream=True).complete(HELLO)

    assert response.text == "a fairly long answer to estimate"
    assert response.usage.input > 0 and response.usage.output > 0
    assert response.finish_reason == "stop"


async def test_stream_tool_call_in_content_is_parsed(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(stream_text(['{"name": "read_file", ', '"arguments": {"path": "a.py"}}']))
    response = await make_model(stream=True).complete(WITH_TOOLS)
    assert [c.name for c in response.tool_calls] == ["read_file"]


async def test_broken_stream_event_is_retried(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = sse_reply([chunk({"content": "hi"}), "{not json"])
    with pytest.raises(ModelUnavailable, match="broken stream event"):
        await make_model(stream=True).complete(HELLO)
    assert len(chat_server.bodies) == 3


# Torn and unusable responses are retried like a 5xx ------------------------------------------------

TORN_STREAMS = {
    "no finish reason, no [DONE]": sse_reply(
        [chunk({"role": "assistant", "content": ""}), chunk({"content": "half an ans"})],
        done=False,
    ),
    "connection cut mid-stream": sse_reply(
        [chunk({"role": "assistant", "content": ""}), chunk({"content": "half"})],
        done=False,
        cut=True,
    ),
    "[DONE] without a finish reason": sse_reply([chunk({"content": "half an ans"})]),
    "a 200 HTML page instead of a stream": raw_reply(
        "<html><body>502 Bad Gateway</body></html>", content_type="text/html"
    ),
}


@pytest.mark.parametrize("torn", TORN_STREAMS.values(), ids=TORN_STREAMS.keys())
async def test_torn_stream_is_retried_then_succeeds(
    chat_server: ChatServer, make_model: MakeModel, torn: Any
) -> None:
    chat_server.script(torn, stream_text(["whole ", "answer"]))
    retries: list[str] = []
    model = make_model(stream=True, on_retry=lambda n, why, delay: retries.append(why))

    response = await model.complete(HELLO)

    assert response.text == "whole answer" and response.finish_reason == "stop"
    assert len(retries) == 1 and len(chat_server.bodies) == 2


async def test_persistently_torn_stream_is_unavailable_not_half_an_answer(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = TORN_STREAMS["no finish reason, no [DONE]"]
    with pytest.raises(ModelUnavailable, match="without a finish reason") as caught:
        await make_model(stream=True).complete(HELLO)
    assert chat_server.url in str(caught.value)
    assert len(chat_server.bodies) == 3


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (raw_reply("{this is not json"), "not JSON"),
        (raw_reply("<html>gateway</html>", content_type="text/html"), r"not JSON \(text/html\)"),
        (json_reply({"id": "x", "object": "chat.completion"}), "no choices"),
        (json_reply({"choices": []}), "no choices"),
        (json_reply({"error": {"message": "model crashed"}}), "model crashed"),
        (json_reply([1, 2]), "not a JSON object"),
    ],
)
async def test_unusable_200_body_is_retried_then_succeeds(
    chat_server: ChatServer, make_model: MakeModel, reply: Any, match: str
) -> None:
    chat_server.script(reply, completion("fine", usage=usage()))
    retries: list[str] = []
    model = make_model(on_retry=lambda n, why, delay: retries.append(why))
    assert (await model.complete(HELLO)).text == "fine"
    assert len(retries) == 1 and re.search(match, retries[0])


async def test_stream_options_rejected_then_dropped(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        error_reply(400, "Unrecognized request argument supplied: stream_options"),
        stream_text(["ok"]),
    )
    response = await make_model(stream=True).complete(HELLO)
    assert response.text == "ok"
    assert "stream_options" in chat_server.bodies[0]
    assert "stream_options" not in chat_server.bodies[1]


async def test_max_completion_tokens_adaptation(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        error_reply(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this "
            "model. Use 'max_completion_tokens' instead.",
            code="unsupported_parameter",
        ),
        completion("ok", usage=usage()),
        completion("again", usage=usage()),
    )
    model = make_model()
    assert (await model.complete(HELLO)).text == "ok"
    assert (await model.complete(HELLO)).text == "again"
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in chat_server.bodies] == [
        (True, None),
        (False, 4096),
        (False, 4096),
    ]


# Retries ---------------------------------------------------------------------------------------


async def test_429_then_success_honours_retry_after(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        error_reply(
            429,
            "Rate limit reached",
            code="rate_limit_exceeded",
            type="requests",
            headers={"Retry-After": "0"},
        ),
        completion("finally", usage=usage()),
    )
    retries: list[tuple[int, str, float]] = []
    # A backoff this large would show in the test time if Retry-After were ignored.
    model = make_model(backoff=30.0, on_retry=lambda *a: retries.append(a))

    response = await model.complete(HELLO)

    assert response.text == "finally"
    assert len(chat_server.bodies) == 2
    assert retries == [(1, "HTTP 429: Rate limit reached", 0.0)]


async def test_async_on_retry_is_awaited(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(
        error_reply(503, "overloaded", type="server_error"), completion("ok", usage=usage())
    )
    seen: list[int] = []

    async def on_retry(attempt: int, error: str, delay: float) -> None:
        seen.append(attempt)

    await make_model(on_retry=on_retry).complete(HELLO)
    assert seen == [1]


async def test_persistent_500_gives_model_unavailable(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = error_reply(500, "boom", type="server_error")
    retries: list[tuple[int, str, float]] = []
    model = make_model(max_retries=3, on_retry=lambda *a: retries.append(a))

    with pytest.raises(ModelUnavailable) as caught:
        await model.complete(HELLO)

    assert len(chat_server.bodies) == 4
    assert "after 4 attempts" in str(caught.value)
    assert "HTTP 500: boom" in str(caught.value)
    assert [r[0] for r in retries] == [1, 2, 3]
    assert all(0 < r[2] <= 0.04 for r in retries)  # backoff 0.01 doubling, jittered


async def test_timeout_is_retried_then_unavailable_and_fast(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = completion("too late", usage=usage(), delay=3.0)
    model = make_model(timeout=0.2, max_retries=2, backoff=0.01)

    started = time.monotonic()
    with pytest.raises(ModelUnavailable, match="after 3 attempts"):
        await model.complete(HELLO)
    elapsed = time.monotonic() - started

    assert len(chat_server.bodies) == 3
    assert elapsed < 1.5


async def test_stream_stalling_past_timeout_is_bounded(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    # Headers and a first chunk arrive at once, then the server stalls between events.
    chat_server.default = sse_reply(
        [chunk({"content": "a"}), chunk({"content": "b"})], event_delay=3.0
    )
    model = make_model(stream=True, timeout=0.2, max_retries=1)
    with pytest.raises(ModelUnavailable, match="after 2 attempts"):
        await model.complete(HELLO)


async def test_connection_refused_is_retried_then_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with OpenAIModel(
        "m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff=0.01, timeout=2.0
    ) as model:
        with pytest.raises(ModelUnavailable, match="connection error"):
            await model.complete(HELLO)


async def test_insufficient_quota_is_not_retried(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        error_reply(429, "You exceeded your current quota", code="insufficient_quota")
    )
    with pytest.raises(ModelUnavailable, match="quota"):
        await make_model().complete(HELLO)
    assert len(chat_server.bodies) == 1


# Errors that no retry fixes ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_bad_key_is_auth_error_without_the_key(
    chat_server: ChatServer, make_model: MakeModel, status: int
) -> None:
    # Servers echo the key they were given; the adapter must not pass it on.
    chat_server.script(
        error_reply(status, f"Incorrect API key provided: {SECRET_KEY}.", code="invalid_api_key")
    )
    model = make_model()

    with pytest.raises(ModelAuthError) as caught:
        await model.complete(HELLO)

    text = str(caught.value)
    assert f"the endpoint at {chat_server.url} rejected the API key" in text
    assert SECRET_KEY not in text and SECRET_KEY not in repr(caught.value)
    assert SECRET_KEY not in repr(model)
    assert len(chat_server.bodies) == 1


async def test_unknown_model_404(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(error_reply(404, "The model `gpt-9` does not exist", code="model_not_found"))
    with pytest.raises(ModelNotFound, match="'gpt-9'"):
        await make_model(model="gpt-9").complete(HELLO)


async def test_model_not_found_code_on_400(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(error_reply(400, "no such model", code="model_not_found"))
    with pytest.raises(ModelNotFound):
        await make_model().complete(HELLO)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("This model's maximum context length is 8192 tokens.", "context_length_exceeded"),
        ("the request exceeds the available context size, try increasing it", None),
        ("Input has too many tokens", None),
        ("prompt exceeds the context window", None),
    ],
)
async def test_context_length_exceeded(
    chat_server: ChatServer, make_model: MakeModel, message: str, code: str | None
) -> None:
    chat_server.script(error_reply(400, message, code=code))
    with pytest.raises(ContextLengthExceeded):
        await make_model().complete(HELLO)
    assert len(chat_server.bodies) == 1


async def test_other_4xx_is_response_error_with_server_message(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(error_reply(422, "messages[0].role must be one of ..."))
    with pytest.raises(ModelResponseError, match=r"HTTP 422: messages\[0\]\.role must be"):
        await make_model().complete(HELLO)
    assert len(chat_server.bodies) == 1


async def test_persistently_unusable_body_is_unavailable_naming_the_endpoint(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = raw_reply("<html>gateway</html>", content_type="text/html")
    with pytest.raises(ModelUnavailable, match="not JSON") as caught:
        await make_model().complete(HELLO)
    assert chat_server.url in str(caught.value) and len(chat_server.bodies) == 3


# Configuration ---------------------------------------------------------------------------------


async def test_base_url_and_key_from_environment(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    chat_server.script(completion("env", usage=usage()))
    async with OpenAIModel("m") as model:
        assert (await model.complete(HELLO)).text == "env"
    assert chat_server.requests[-1].headers["authorization"] == "Bearer sk-from-env"


async def test_unresolvable_host_fails_at_once_naming_the_url() -> None:
    url = "http://no-such-host.swarmflow.invalid:8080/v1"
    retries: list[str] = []
    async with OpenAIModel(
        "m", base_url=url, max_retries=4, on_retry=lambda n, why, d: retries.append(why)
    ) as model:
        with pytest.raises(ModelUnavailable, match="does not resolve") as caught:
            await model.complete(HELLO)
    assert url in str(caught.value) and "OPENAI_BASE_URL" in str(caught.value)
    assert retries == []


def test_model_name_without_an_endpoint_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from swarmflow import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY .* or OPENAI_BASE_URL") as caught:
        OpenAIModel("gpt-4o")
    assert "'gpt-4o'" in str(caught.value)
    OpenAIModel("gpt-4o", api_key="sk-x")  # either one is enough
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    OpenAIModel("gpt-4o")


async def test_no_key_sends_a_placeholder(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat_server.script(completion("ok", usage=usage()))
    async with OpenAIModel("m", base_url=chat_server.url) as model:
        await model.complete(HELLO)
    assert chat_server.requests[-1].headers["authorization"] == "Bearer sk-no-key"


def test_model_is_usable_across_event_loops(chat_server: ChatServer) -> None:
    import anyio

    chat_server.script(completion("one", usage=usage()), completion("two", usage=usage()))
    model = OpenAIModel("m", base_url=chat_server.url)

    async def once() -> str | None:
        async with model:
            return (await model.complete(HELLO)).text

    assert [anyio.run(once), anyio.run(once)] == ["one", "two"]


def test_errors_are_model_errors() -> None:
    for kind in (
        ModelAuthError,
        ModelNotFound,
        ContextLengthExceeded,
        ModelUnavailable,
        ModelResponseError,
    ):
        assert issubclass(kind, ModelError)


def test_import_does_not_load_openai() -> None:
    code = "import sys, swarmflow.models; print('openai' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert out.stdout.strip() == "False"


# Backoff arithmetic ------------------------------------------------------------------------------


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    for attempt in range(1, 12):
        ceiling = min(BACKOFF_CAP, 0.5 * 2 ** (attempt - 1))
        assert ceiling / 2 <= backoff_delay(attempt, 0.5, None) <= ceiling
    assert backoff_delay(3, 0.5, 2.5) == 2.5
    assert backoff_delay(3, 0.5, 10_000) == 60.0


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


def test_payload_is_inspectable_without_a_server() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", stream=True)
    payload = model.wire_payload(WITH_TOOLS)
    assert json.loads(json.dumps(payload)) == payload
    assert payload["stream_options"] == {"include_usage": True}
