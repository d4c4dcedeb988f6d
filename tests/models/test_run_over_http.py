"""A whole run through the OpenAI adapter against the loopback server: retries become
events, usage is priced, and the key never reaches an event."""

from __future__ import annotations

import pytest

from swarmflow import Agent, AgentFailed, Team, agent, flow, run
from swarmflow.testing import FunctionModel
from tests.models.conftest import SECRET_KEY, MakeModel
from tests.support.chat_server import (
    ChatServer,
    chunk,
    completion,
    error_reply,
    raw_reply,
    sse_reply,
    stream_text,
    usage,
    wire_call,
)

pytestmark = pytest.mark.allow_model_calls


@flow(team=Team([Agent("coder", tools=["submit"])]))
async def one_call(task: str) -> str:
    return (await agent("coder", task)).text


async def test_retry_is_recorded_and_usage_priced(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        error_reply(429, "slow down", headers={"Retry-After": "0"}),
        completion(
            tool_calls=[wire_call("submit", '{"summary": "done it"}')],
            usage=usage(1000, 100, cached=400),
        ),
    )
    model = make_model(model="gpt-4o-mini")
    result = await run(one_call, model=model, task="fix")
    assert result.status == "ok" and result.output == "done it"
    retried = [e for e in result.events if e.type == "model_retried"]
    assert len(retried) == 1 and retried[0].agent == "coder" and "429" in retried[0].error
    called = next(e for e in result.events if e.type == "model_called")
    assert (called.tokens_in, called.tokens_out, called.tokens_cached) == (1000, 100, 400)
    expected = (600 * 0.15 + 400 * 0.075 + 100 * 0.60) / 1_000_000
    assert called.cost == pytest.approx(expected)
    assert result.usage["coder"].cost == pytest.approx(expected)
    assert SECRET_KEY not in result.events_path.read_text()


async def test_price_table_override(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(completion("ok", usage=usage(2_000_000, 0)))
    result = await run(
        one_call,
        model=make_model(model="my-local"),
        task="x",
        prices={"my-local": {"input": 1.0, "cached_input": 0.5, "output": 2.0}},
    )
    assert result.cost == pytest.approx(2.0)


async def test_bad_key_ends_the_session_in_error_with_a_reason(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(error_reply(401, "Incorrect API key provided", code="invalid_api_key"))
    result = await run(one_call, model=make_model(), task="x", raise_on_failure=False)
    assert isinstance(result.error, AgentFailed)
    ended = next(e for e in result.events if e.type == "session_ended")
    assert ended.state == "error" and "ModelAuthError" in ended.detail
    assert SECRET_KEY not in result.events_path.read_text()


async def test_real_calls_are_blocked_without_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    from swarmflow.models import OpenAIModel
    from swarmflow.testing import BLOCK_ENV

    monkeypatch.setenv(BLOCK_ENV, "1")
    model = OpenAIModel("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    result = await run(one_call, model=model, task="x", raise_on_failure=False)
    assert result.status == "failed" and "blocked" in str(result.error)
    assert (await run(one_call, model=FunctionModel(lambda r: "ok"), task="x")).status == "ok"
    await model.aclose()


async def test_torn_and_html_answers_are_recorded_retries_not_half_answers(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        sse_reply([chunk({"content": "half an ans"})], done=False),
        raw_reply("<html>502</html>", content_type="text/html"),
        stream_text(["the whole answer"]),
    )
    result = await run(one_call, model=make_model(stream=True), task="x")
    assert result.output == "the whole answer"
    retried = [e.error for e in result.events if e.type == "model_retried"]
    assert len(retried) == 2
    assert "without a finish reason" in retried[0] and "finish reason" in retried[1]
