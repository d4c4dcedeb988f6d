"""The output-mode step-down against the loopback chat-completions server: decided once per
endpoint from the rejected call's own form, recorded as an event, and refused when pinned."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, Team, agent, flow, parallel, run
from swarmflow.experiments import Arm, Experiment, FunctionGrader, read_experiment, run_experiment
from swarmflow.report.log import read_log
from tests.models.conftest import MakeModel
from tests.support.chat_server import ChatServer, Reply, completion, error_reply, usage

pytestmark = pytest.mark.allow_model_calls

REJECTION = error_reply(400, "response_format type 'json_schema' is not supported")
SUBMIT = json.dumps({"tool": "submit", "arguments": {"summary": "done"}})
ARRIVAL_WAIT = 30.0
"""Seconds the server waits for the second first call before it gives up (a broken test)."""


class RefusesJsonSchema:
    """A server that rejects `json_schema` only once both first calls have arrived (so both
    were sent in that form before either was rejected), answers a JSON tool call in
    `json_object` mode, and answers prose when tools go on the wire (as a small model that
    ignores `tool_choice` does)."""

    def __init__(self, first_calls: int) -> None:
        self.both_sent = threading.Barrier(first_calls, timeout=ARRIVAL_WAIT)

    def __call__(self, body: Any) -> Reply:
        form = (body.get("response_format") or {}).get("type")
        if form == "json_schema":
            self.both_sent.wait()
            return REJECTION
        if form == "json_object":
            return completion(SUBMIT, usage=usage())
        return completion("I would rather explain it in words.", usage=usage())


@flow(team=Team([Agent("a", tools=["submit"]), Agent("b", tools=["submit"])]))
async def pair(task: str) -> list[str]:
    outcomes = await parallel(lambda i: agent(("a", "b")[i], task), n=2)
    return [o.value.text if o.ok else f"failed: {o.error}" for o in outcomes]


async def test_two_concurrent_first_calls_step_down_once_and_keep_forced_tool_calls(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.respond_with(RefusesJsonSchema(first_calls=2))
    model = make_model(force_tool_choice=True, max_retries=0)  # loopback: json_schema tools

    result = await run(pair, model=model, task="finish")

    assert result.status == "ok" and result.output == ["done", "done"]
    forms = [(b.get("response_format") or {}).get("type") for b in chat_server.bodies]
    assert forms[:2] == ["json_schema", "json_schema"]
    assert forms[2:] == ["json_object", "json_object"]  # forced tool calls stay on for both
    assert all("tools" not in body for body in chat_server.bodies)
    executed = sorted((e.agent, e.tool) for e in result.events if e.type == "tool_executed")
    assert executed == [("a", "submit"), ("b", "submit")]
    stepped = [e for e in result.events if e.type == "output_mode_stepped_down"]
    assert [(e.rejected, e.chosen) for e in stepped] == [("json_schema", "json_object")]
    assert stepped[0].endpoint == f"test-model at {chat_server.url}"
    assert "not supported" in stepped[0].reason
    called = [e.output_mode for e in result.events if e.type == "model_called"]
    assert called == ["json_object", "json_object"]


async def test_pinned_modes_fail_loudly_instead_of_stepping_down(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.respond_with(RefusesJsonSchema(first_calls=1))
    model = make_model(force_tool_choice=True, max_retries=0)

    result = await run(pair, model=model, task="finish", pin_modes=True)

    assert [o.startswith("failed: ") for o in result.output] == [True, True]
    assert "rejected response_format 'json_schema'" in result.output[0]
    assert "pinned" in result.output[0]
    forms = {(b.get("response_format") or {}).get("type") for b in chat_server.bodies}
    assert forms == {"json_schema"}  # nothing was sent in a lower form
    assert not [e for e in result.events if e.type == "output_mode_stepped_down"]
    assert model.modes.form == "json_schema"


async def test_an_adapter_can_pin_its_own_modes(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.respond_with(RefusesJsonSchema(first_calls=1))
    model = make_model(force_tool_choice=True, max_retries=0, pin_modes=True)

    result = await run(pair, model=model, task="finish")

    assert all(o.startswith("failed: ") and "pinned" in o for o in result.output)
    assert model.modes.form == "json_schema"


@flow(team=Team([Agent("coder", tools=["submit"])]))
async def finish(task: str) -> str:
    return (await agent("coder", task)).text


def two_arms(tmp_path: Path, *, pin_modes: bool) -> Experiment:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "inputs": {"task": "finish"}}) + "\n")
    arms = [Arm(name=name, flow=finish, reference=name == "a") for name in ("a", "b")]
    grader = FunctionGrader(fn=lambda task, result: result.output == "done")
    return Experiment(name="modes", tasks=tasks, arms=arms, grader=grader, concurrency=2,
                      pin_modes=pin_modes)  # fmt: skip


async def test_an_experiment_reports_which_arms_ran_in_which_mode(
    chat_server: ChatServer, make_model: MakeModel, tmp_path: Path
) -> None:
    chat_server.respond_with(RefusesJsonSchema(first_calls=2))  # both arms' first calls at once
    model = make_model(force_tool_choice=True, max_retries=0)

    await run_experiment(two_arms(tmp_path, pin_modes=False), out=tmp_path / "out", model=model)

    report = read_experiment(tmp_path / "out")
    assert {r.arm: (r.resolved, r.output_modes) for r in report.rows} == {
        "a": (True, "json_object"), "b": (True, "json_object")
    }  # fmt: skip
    assert "Output modes" in report.text() and "json_object 1" in report.text()
    assert {a["name"]: a["output_modes"] for a in report.json()["arms"]} == {
        "a": {"json_object": 1}, "b": {"json_object": 1}
    }  # fmt: skip
    logs = [read_log(Path(r.run_dir)) for r in report.rows]
    stepped = [e for log in logs for e in log.events if e.type == "output_mode_stepped_down"]
    assert len(stepped) == 1  # decided once, in the run whose call was rejected first


async def test_an_experiment_with_pinned_modes_fails_its_runs_loudly(
    chat_server: ChatServer, make_model: MakeModel, tmp_path: Path
) -> None:
    chat_server.respond_with(RefusesJsonSchema(first_calls=1))
    model = make_model(force_tool_choice=True, max_retries=0)

    await run_experiment(two_arms(tmp_path, pin_modes=True), out=tmp_path / "out", model=model)

    rows = read_experiment(tmp_path / "out").rows
    assert [(r.status, r.resolved) for r in rows] == [("failed", False), ("failed", False)]
    lines = (tmp_path / "out/arms/a/results.jsonl").read_text()
    assert "output modes are pinned" in lines
    assert {(b.get("response_format") or {}).get("type") for b in chat_server.bodies} == {
        "json_schema"
    }


def test_the_command_line_pins_the_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from swarmflow.cli.model_options import add_model_options, model_from_args

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    add_model_options(parser)
    pinned = model_from_args(parser.parse_args(["--model", "m", "--pin-modes"]))
    free = model_from_args(parser.parse_args(["--model", "m"]))
    assert (pinned.modes.pinned, free.modes.pinned) == (True, False)
