"""`swarmflow models probe` and the probe before a run's first call, against a real loopback
server that speaks the chat-completions wire format and refuses some forms, as llama.cpp's
server does: no `json_schema` response format, `tool_choice` ignored, a stated context."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarmflow.cli import main
from swarmflow.models.probe import probe, probe_cached
from tests.support.chat_server import (
    ChatServer,
    Reply,
    completion,
    error_reply,
    stream_text,
)

pytestmark = pytest.mark.allow_model_calls


def _like_llama_cpp(body: dict[str, Any]) -> Reply:
    """Refuses the JSON-schema response format, ignores tool_choice, never calls a tool
    unforced; keeps to a schema given as `json_object` (the run's forced calls included)."""
    if body.get("stream"):
        return stream_text(["o", "k"])
    fmt = body.get("response_format")
    if fmt is not None and fmt["type"] == "json_schema":
        return error_reply(400, "response_format type json_schema is not supported")
    if fmt is not None:
        schema = fmt.get("schema") or {}
        if '"tool"' in json.dumps(schema):  # the run's forced call: measure, then submit
            offered = [b["properties"]["tool"]["enum"][0] for b in schema.get("anyOf", [schema])]
            measured = "6,650 km" in json.dumps(body["messages"])
            name = "submit" if measured or "measure" not in offered else "measure"
            return completion(json.dumps({"tool": name, "arguments": _args(name)}))
        return completion('{"answer": "ok"}')
    return completion("ok")  # tool_choice ignored: text, not a call


def _args(name: str) -> dict[str, str]:
    return {"summary": "measured"} if name == "submit" else {"river": "Nile"}


@pytest.fixture
def server() -> Any:
    with ChatServer() as chat:
        chat.respond_with(_like_llama_cpp)
        chat.models = {"object": "list", "data": [{"id": "m", "meta": {"n_ctx_train": 2048}}]}
        yield chat


def test_the_probe_finds_what_the_server_honours(server: ChatServer) -> None:
    profile = probe(server.url, "test-model")
    assert profile.structured == "json_object"
    assert profile.forced_tools == "json_schema"  # tool_choice is ignored: constrain instead
    assert profile.calls_tools_unforced is False
    assert profile.streaming is True and profile.context_length == 2048
    assert any("json_schema is not supported" in note for note in profile.notes)


def test_the_profile_is_cached_per_endpoint_and_model(server: ChatServer) -> None:
    first, cached = probe_cached(server.url, "test-model")
    asked = len(server.requests)
    again, cached_again = probe_cached(server.url, "test-model")
    assert (cached, cached_again) == (False, True) and again == first
    assert len(server.requests) == asked  # nothing asked again
    probe_cached(server.url, "other-model")
    assert len(server.requests) > asked


def test_swarmflow_models_probe_prints_each_answer(
    server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "probe", "--base-url", server.url, "--model", "test-model"]) == 0
    out = capsys.readouterr().out
    assert "structured answers     json_object" in out
    assert "forced tool calls      json_schema" in out
    assert "context length         2,048 tokens" in out
    assert out.splitlines()[-1].startswith("a run uses: test-model at ")


def test_an_endpoint_that_is_not_there_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    assert main(["models", "probe", "--base-url", url, "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach" in err


FLOW = '''
from swarmflow import Agent, Team, agent, flow, tool


@tool
def measure(river: str) -> str:
    """Measure a river.

    Args:
        river: which river.
    """
    return f"{river}: 6,650 km"


TEAM = Team([Agent("surveyor", tools=[measure, "submit"])])


@flow(team=TEAM)
async def survey() -> str:
    return (await agent("surveyor", "How long is the Nile?")).text
'''


def test_a_run_without_mode_flags_uses_the_probe_and_records_it(
    server: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SWARMFLOW_PROBE")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "flows.py").write_text(FLOW)
    code = main(["run", f"{tmp_path}/flows.py:survey", "--model", "test-model", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "structured answers by json_object, forced tool calls by json_schema" in captured.err
    result = json.loads(captured.out)
    events = [json.loads(line) for line in Path(result["events"]).read_text().splitlines()]
    (probed,) = [e for e in events if e["type"] == "endpoint_probed"]
    assert probed["structured"] == "json_object" and probed["context_length"] == 2048
    (measured,) = [e for e in events if e["type"] == "tool_executed" and e["tool"] == "measure"]
    assert measured["ok"] and "6,650 km" in measured["result"]  # the forced call ran, first try


def test_a_forged_cache_entry_is_probed_again(server: ChatServer) -> None:
    import os

    cache = Path(os.environ["SWARMFLOW_PROBES"])
    cache.write_text(json.dumps({f"{server.url.rstrip('/')} test-model": {"structured": 5}}))
    profile, cached = probe_cached(server.url, "test-model")
    assert cached is False and profile.structured == "json_object"
    assert json.loads(cache.read_text())[f"{server.url.rstrip('/')} test-model"]["structured"]
