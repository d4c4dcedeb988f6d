"""Whole flows on the real llama.cpp server (SmolLM2-135M): the protocol works end to end.

The answers' quality is not asserted (a 135M model writes poor reviews); that a structured
answer comes back valid and that a forced tool call is executed, is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from examples.swarm_examples import Review
from swarmflow import Agent, Team, agent, flow, run
from swarmflow.dsl import load_flow
from swarmflow.models import OpenAIModel

pytestmark = [pytest.mark.llm, pytest.mark.allow_model_calls]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _model(url: str, **kw: Any) -> OpenAIModel:
    return OpenAIModel("smollm2", base_url=url, timeout=180.0, max_retries=1, **kw)


def _approve(question: str, payload: Any) -> Any:
    return payload if payload is not None else "yes"


async def test_review_loop_finishes_with_a_valid_review(llama_url: str) -> None:
    review_loop = load_flow(EXAMPLES / "review_loop.swarm")
    async with _model(llama_url) as model:
        result = await run(review_loop, model=model, human=_approve, task="add two numbers")

    assert result.status == "ok", result.error
    called = [e for e in result.events if e.type == "model_called"]
    structured = [e for e in called if e.agent == "reviewer"]
    # The run is ok only if a valid Review came back within the re-ask bound.
    assert structured and all(e.output_mode == "json_object" for e in structured)
    assert isinstance(result.output, str)


@flow(team=Team([Agent("reader", tools=["read_file"], workspace="local", max_steps=4)]))
async def read_and_answer(question: str) -> str:
    return (await agent("reader", question)).text


async def test_tool_using_flow_executes_a_forced_tool_call(llama_url: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("The secret word is pelican.\n")
    # The turn's first call is forced (a JSON answer over the tools), later ones are free: the
    # agent must look the file up, and may then answer in words.
    async with _model(llama_url, force_tool_choice="first") as model:
        result = await run(
            read_and_answer,
            model=model,
            repo=tmp_path,
            question="Read notes.txt with read_file, then tell me the secret word.",
        )

    assert result.status == "ok", result.error
    executed = [e for e in result.events if e.type == "tool_executed"]
    assert executed and executed[0].tool == "read_file", executed
    ended = [e for e in result.events if e.type == "session_ended"]
    # What a 135M model says after the tool ran is its own: an empty answer or a step limit
    # is its quality, not the protocol's (which is what this test checks).
    assert len(ended) == 1 and ended[0].state in ("done", "stopped"), ended
    assert isinstance(result.output, str)


async def test_structured_answer_from_the_python_api(llama_url: str) -> None:
    @flow(team=Team([Agent("reviewer")]))
    async def review(draft: str) -> Review:
        return (await agent("reviewer", f"Review this draft:\n{draft}", output=Review)).value

    async with _model(llama_url) as model:
        result = await run(review, model=model, draft="def add(a, b): return a - b")
    assert isinstance(result.output, Review)


CLI_FLOW = """
from swarmflow import Agent, Team, agent, flow

TEAM = Team([Agent("reader", tools=["read_file", "submit"], workspace="local", max_steps=4)])


@flow(team=TEAM)
async def read_and_answer(question: str) -> str:
    return (await agent("reader", question)).text
"""


def test_a_cli_run_with_no_mode_flags_makes_forced_tool_calls_that_execute(
    llama_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`swarmflow run --model` on a llama.cpp endpoint with no mode flag: the run probes the
    endpoint, chooses the forms that work, and its first model call is a tool call that runs."""
    from swarmflow.cli import main

    monkeypatch.delenv("SWARMFLOW_PROBE", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", llama_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("The secret word is pelican.\n")
    (tmp_path / "flows.py").write_text(CLI_FLOW)
    question = "question=Read notes.txt with read_file, then submit the secret word."
    argv = ["run", f"{tmp_path}/flows.py:read_and_answer", "--model", "smollm2", "--repo"]
    code = main([*argv, str(repo), "--input", question, "--json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    assert "as probed now" in captured.err
    result = json.loads(captured.out)
    events = [json.loads(line) for line in Path(result["events"]).read_text().splitlines()]
    assert [e for e in events if e["type"] == "endpoint_probed"]
    first = next(e for e in events if e["type"] == "model_called")
    assert first["tool_calls"], (captured.err, json.dumps(first))  # forced: a tool call
    executed = [e for e in events if e["type"] == "tool_executed"]
    assert executed and executed[0]["tool"] == "read_file", executed  # run, whatever its path
