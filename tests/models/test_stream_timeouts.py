"""How long a model call may take: a stream times out on silence, a plain call as a whole.

The loopback server paces its streams itself (`event_delay`, the pause before each event):
the total it waits is fixed by the script, so it outlasts the timeout however fast the machine
is, while each pause is a tenth of the timeout. The test bodies wait only on the call.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from swarmflow.cli import main
from swarmflow.core.errors import ConfigError, ModelUnavailable
from swarmflow.core.messages import Message, ModelRequest
from swarmflow.models import OpenAIModel
from tests.dsl.helpers import flow_text
from tests.models.conftest import MakeModel
from tests.support.chat_server import (
    ChatServer,
    Reply,
    chunk,
    completion,
    sse_reply,
    stream_text,
    usage,
    usage_chunk,
)

pytestmark = pytest.mark.allow_model_calls

HELLO = ModelRequest(messages=[Message("user", "say hello")])
TIMEOUT = 1.0
GAP = TIMEOUT / 10
KEEP_ALIVE = ": keep-alive"


def silent_after_first_chunk() -> Reply:
    """A stream that sends one chunk, then nothing until the server stops."""
    return sse_reply([chunk({"role": "assistant", "content": "a"}), chunk({})], event_delay=600)


async def test_a_slow_steady_stream_outlasts_the_timeout_without_a_retry(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    # A server still reading the prompt sends only keep-alive comments, for longer than the
    # timeout; then it writes the answer slowly, with empty deltas among the pieces.
    waiting: list[dict[str, Any] | str] = [KEEP_ALIVE] * 12
    pieces = [chunk({"content": f"w{n} "} if n % 3 else {}) for n in range(12)]
    events = [*waiting, chunk({"role": "assistant", "content": ""}), *pieces]
    events += [chunk({}, "stop"), usage_chunk(prompt=4, completion=8)]
    assert len(waiting) * GAP > TIMEOUT and (len(events) - len(waiting)) * GAP > TIMEOUT
    chat_server.script(sse_reply(events, event_delay=GAP))
    retries: list[str] = []
    model = make_model(stream=True, timeout=TIMEOUT, on_retry=lambda n, why, d: retries.append(why))

    response = await model.complete(HELLO)

    assert response.text == "".join(f"w{n} " for n in range(12) if n % 3)
    assert response.finish_reason == "stop" and response.usage.output == 8
    assert retries == [] and len(chat_server.bodies) == 1


async def test_a_stream_that_goes_silent_times_out_and_the_retry_names_the_option(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = silent_after_first_chunk()
    retries: list[str] = []
    model = make_model(
        stream=True, timeout=0.3, max_retries=1, on_retry=lambda n, why, d: retries.append(why)
    )

    with pytest.raises(ModelUnavailable) as caught:
        await model.complete(HELLO)

    said = "no bytes from the server for 0.3 s (raise --timeout or OpenAIModel(timeout=...))"
    assert retries == [said]
    assert str(caught.value).endswith(f"failed after 2 attempts; last error: {said}")
    assert len(chat_server.bodies) == 2


async def test_the_wait_for_the_first_byte_is_silence_too(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(sse_reply([chunk({"content": "late"}, "stop")], delay=600))
    model = make_model(stream=True, timeout=0.3, max_retries=0)
    with pytest.raises(ModelUnavailable, match=r"no bytes from the server for 0\.3 s"):
        await model.complete(HELLO)


async def test_total_timeout_caps_a_steady_stream(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    pieces = [chunk({"content": "x"}) for _ in range(60)]  # six seconds of steady progress
    chat_server.script(sse_reply([*pieces, chunk({}, "stop")], event_delay=GAP))
    model = make_model(stream=True, timeout=TIMEOUT, total_timeout=0.5, max_retries=0)
    assert model.total_timeout == 0.5
    with pytest.raises(ModelUnavailable) as caught:
        await model.complete(HELLO)
    assert "no complete answer within total_timeout=0.5 s" in str(caught.value)
    assert "raise OpenAIModel(total_timeout=...)" in str(caught.value)


async def test_a_plain_call_is_bounded_as_a_whole_and_says_which_option_raises_it(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.default = completion("too late", usage=usage(), delay=600)
    retries: list[str] = []
    model = make_model(timeout=0.3, max_retries=1, on_retry=lambda n, why, d: retries.append(why))
    with pytest.raises(ModelUnavailable) as caught:
        await model.complete(HELLO)
    assert len(retries) == 1 and retries[0].startswith(
        "no complete answer within 0.3 s (raise --timeout or OpenAIModel(timeout=...)"
    )
    assert str(caught.value).endswith(retries[0])


def test_the_default_timeout_follows_the_mode() -> None:
    url = "http://127.0.0.1:9/v1"
    assert OpenAIModel("m", base_url=url, stream=True).timeout == 60.0  # silence
    assert OpenAIModel("m", base_url=url).timeout == 300.0  # the whole attempt
    assert OpenAIModel("m", base_url=url, timeout=7).timeout == 7.0
    assert OpenAIModel("m", base_url=url).total_timeout is None
    assert OpenAIModel("m", base_url=url, timeout=math.inf).timeout == math.inf  # no limit


@pytest.mark.parametrize("options", [{"timeout": 0}, {"timeout": -1}, {"total_timeout": 0}])
def test_a_timeout_no_call_could_keep_is_a_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="must be a positive number of seconds"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", **options)


# The command line -------------------------------------------------------------------------------


def test_the_timeout_flag_reaches_the_model_and_its_retry_is_recorded(
    chat_server: ChatServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat_server.script(silent_after_first_chunk(), stream_text(["hello"]))
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    path = tmp_path / "ask.swarm"
    path.write_text(flow_text("  return a(task)", agents="agent a {}"))
    args = ["run", str(path), "--model", "test-model", "--stream", "--timeout", "0.3"]

    assert main([*args, "--input", "task=x"]) == 0

    out = capsys.readouterr().out
    log = Path(out.split("events: ", 1)[1].splitlines()[0])
    events = [json.loads(line) for line in log.read_text().splitlines()]
    retried = [e["error"] for e in events if e["type"] == "model_retried"]
    assert retried == [
        "no bytes from the server for 0.3 s (raise --timeout or OpenAIModel(timeout=...))"
    ]


@pytest.mark.parametrize("given", ["0", "-5", "soon", "nan"])
def test_a_timeout_flag_that_is_not_a_positive_number_is_a_usage_error(
    given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ask.swarm"
    path.write_text(flow_text("  return a(task)", agents="agent a {}"))
    assert main(["run", str(path), "--model", "m", "--timeout", given, "--input", "task=x"]) == 2
    err = capsys.readouterr().err
    assert f"expected a positive number of seconds, got {given!r}" in err
    assert "Traceback" not in err


def test_the_timeout_flag_says_what_it_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "with --stream, the longest silence from the server" in text
    assert "without, the attempt as a whole" in text
    assert "(default 60)" in text and "(default 300)" in text
