"""Fixtures for adapter tests: a loopback chat server and models pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from swarmflow.models import OpenAIModel
from tests.support.chat_server import ChatServer

SECRET_KEY = "sk-test-SECRET-0123456789"

MakeModel = Callable[..., OpenAIModel]


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A started loopback chat-completions server, stopped after the test."""
    with ChatServer() as server:
        yield server
    assert not server.errors, f"the chat server's handler failed: {server.errors}"


@pytest.fixture
async def make_model(chat_server: ChatServer) -> AsyncIterator[MakeModel]:
    """Builds OpenAIModels aimed at the chat server, with fast test defaults; closes them after."""
    made: list[OpenAIModel] = []

    def make(**kw: Any) -> OpenAIModel:
        options: dict[str, Any] = {
            "base_url": chat_server.url,
            "api_key": SECRET_KEY,
            "timeout": 5.0,
            "max_retries": 2,
            "backoff": 0.01,
        }
        options.update(kw)
        model = OpenAIModel(options.pop("model", "test-model"), **options)
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()
