"""A hostile or broken OpenAI-compatible endpoint, on a real loopback server: whatever its
rate-limit headers say, a 429 is retried with a sane wait and the call goes on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from swarmflow.core.messages import Message, ModelRequest
from swarmflow.models import OpenAIModel
from tests.support.chat_server import ChatServer, completion, error_reply, usage

pytestmark = pytest.mark.allow_model_calls

HELLO = ModelRequest(messages=[Message("user", "say hello")])


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server
    assert not server.errors, f"the chat server's handler failed: {server.errors}"


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "nan"},
        {"retry-after-ms": "nan"},
        {"retry-after-ms": "-inf"},
        {"Retry-After": "-3"},
        {"retry-after-ms": "1e400", "Retry-After": "0"},
        {"Retry-After": "inf"},
    ],
)
async def test_a_429_with_a_nonsense_wait_is_retried(
    chat_server: ChatServer, headers: dict[str, str]
) -> None:
    chat_server.script(
        error_reply(429, "Rate limit reached", code="rate_limit_exceeded", headers=headers),
        completion("finally", usage=usage()),
    )
    waits: list[float] = []
    model = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test", timeout=5.0,
                        max_retries=2, backoff=0.01,
                        on_retry=lambda attempt, error, delay: waits.append(delay))  # fmt: skip
    try:
        response = await model.complete(HELLO)
    finally:
        await model.aclose()
    assert response.text == "finally"
    assert len(waits) == 1 and 0.0 <= waits[0] <= 60.0
