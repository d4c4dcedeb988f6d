"""The real llama.cpp server for `make test-llm`, started once for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.llama_server import ServerFailed, Unavailable, llama_server


@pytest.fixture(scope="session")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama.cpp server serving SmolLM2; skips without the model packages."""
    try:
        with llama_server(tmp_path_factory.mktemp("llama")) as url:
            yield url
    except Unavailable as exc:
        pytest.skip(str(exc))
    except ServerFailed as exc:
        pytest.fail(str(exc))
