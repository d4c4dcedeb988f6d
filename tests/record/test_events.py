"""The event stream: envelope, contiguous sequence, JSONL durability, no secrets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from swarmflow import Agent, agent, parallel
from swarmflow.record.events import parse_event
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.sinks import JsonlSink, MemorySink, read_events
from swarmflow.testing import FunctionModel, ScriptedModel, tool_call
from tests.runtime.helpers import run_one
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]


async def test_sequence_is_contiguous_and_envelope_complete() -> None:
    model = FunctionModel(lambda req: "ok")
    result = await run_one([Agent("w")], lambda: parallel(lambda i: agent("w", str(i)), n=5), model)
    events = result.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert {e.run_id for e in events} == {result.run_id}
    assert events[0].type == "run_started" and events[-1].type == "run_finished"
    calls = [e for e in events if e.type == "model_called"]
    assert sorted(e.branch for e in calls) == [f"parallel[{i}]" for i in range(5)]
    assert all(e.agent == "w" and e.session for e in calls)
    assert all(b.t >= a.t for a, b in zip(events, events[1:], strict=False))


async def test_jsonl_round_trips_the_memory_stream() -> None:
    result = await run_one([Agent("w")], lambda: agent("w", "x"), ScriptedModel(["ok"]))
    from_file = list(read_events(result.events_path))
    assert from_file == result.events


def test_jsonl_is_valid_after_sigkill(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill_when_ready(
        [sys.executable, str(Path(__file__).parents[1] / "durable" / "kill_target.py"), str(tmp_path)], env
    )
    (log,) = tmp_path.glob(f"*/{EVENTS_FILE}")
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""  # the file ends at a line boundary
    events = [parse_event(line) for line in lines[:-1]]
    assert len(events) > 20
    assert [e.seq for e in events] == list(range(len(events)))
    assert not any(e.type == "run_finished" for e in events)


async def test_api_keys_in_the_environment_never_reach_a_sink(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = "sk-test-4f9a8b7c6d5e4f3a2b1c"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    leaky = FunctionModel(
        lambda req: (
            "done"
            if req.messages[-1].role == "tool"
            else tool_call("run_shell", command=f"echo {secret}")
        )
    )
    memory = MemorySink()
    jsonl = JsonlSink(tmp_path / EVENTS_FILE)
    shell = Agent("s", tools=["run_shell"], workspace="local")
    result = await run_one(
        [shell],
        lambda: agent("s", f"the key is {secret}"),
        leaky,
        events=[memory, jsonl],
        repo=tmp_path,
    )
    assert result.status == "ok"
    text = (tmp_path / EVENTS_FILE).read_text()
    assert secret not in text and "[redacted]" in text
    for event in memory.events:
        assert secret not in event.model_dump_json()


def test_event_schema_is_json_serialisable() -> None:
    from swarmflow.record.events import ModelCalled

    e = ModelCalled(run_id="r", seq=0, ts=0.0, t=0.0, tokens_in=3)
    assert json.loads(e.model_dump_json())["type"] == "model_called"
    from pydantic import ValidationError

    with pytest.raises(ValidationError):  # frozen
        e.seq = 3  # type: ignore[misc]


ECHOED = "xa9Q8w7E6r5T4y3U2i1O0pLk"
"""A secret in the environment (under a name only the one policy calls secret) that the model
echoes; no part of it of MIN_PART characters may show anywhere."""


def _parts(secret: str) -> list[str]:
    from swarmflow.core.secrets import MIN_PART

    n = len(secret)
    return [secret[i:j] for i in range(n) for j in range(i + MIN_PART, n + 1)]


def _assert_clean(surface: str, text: str) -> None:
    leaked = [p for p in _parts(ECHOED) if p in text]
    assert not leaked, f"{surface} shows {leaked[:3]}"


async def test_an_echoed_secret_reaches_no_surface(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The model echoes X_AUTH; the session's 1,000-character preview cuts it in two, and the
    human question, progress, report and log show none of it."""
    import io

    from swarmflow import Agent, human
    from swarmflow.flows.progress import ProgressSink
    from swarmflow.report import render_report, report_from_dir

    monkeypatch.setenv("X_AUTH", ECHOED)
    pad = "p" * (1000 - 9)  # the preview ends 9 characters into the secret
    model = FunctionModel(lambda req: f"{pad}{ECHOED} is what I found")
    plain, tty = io.StringIO(), io.StringIO()
    log_dir = tmp_path / "log"
    sinks = [
        MemorySink(),
        JsonlSink(log_dir / EVENTS_FILE),
        ProgressSink(plain, tty=False),
        ProgressSink(tty, tty=True),
    ]

    async def body() -> object:
        out = await agent("w", "find the key")
        return await human(f"Is {out.text[-60:]} right?", payload={"seen": out.text[990:]})

    result = await run_one(
        [Agent("w")], body, model, edges=[("w", "human")], events=sinks, human=["yes"],
    )  # fmt: skip
    assert result.status == "ok", result.error
    finished = [e for e in result.events if e.type == "agent_finished"]
    assert finished and finished[0].preview.startswith(pad)  # the cut really is mid-secret
    _assert_clean(EVENTS_FILE, (log_dir / EVENTS_FILE).read_text())
    _assert_clean("memory sink", "".join(e.model_dump_json() for e in sinks[0].events))
    _assert_clean("plain progress", plain.getvalue())
    _assert_clean("terminal progress", tty.getvalue())
    _assert_clean("report", render_report(result.events, result.run_dir))
    _assert_clean("report from the run directory", report_from_dir(log_dir))
    assert "asking a human" in plain.getvalue() and "[redacted]" in plain.getvalue()


def test_the_cli_prints_no_echoed_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from swarmflow.cli import run_commands

    monkeypatch.setenv("X_AUTH", ECHOED)
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    path = tmp_path / "echo.swarm"
    path.write_text("flow f(task: str) -> str\nagent a {}\nsteps {\n  x = a(task)\n  return x\n}\n")
    parser = argparse.ArgumentParser(prog="swarmflow")
    run_commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", str(path), "--demo", "--input", f"task=key {ECHOED}"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "status: ok" in out and "[redacted]" in out
    _assert_clean("swarmflow run", out)
    (log,) = (tmp_path / "runs").glob(f"*/{EVENTS_FILE}")
    _assert_clean(EVENTS_FILE, log.read_text())


async def test_kept_events_are_built_when_read_and_match_the_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from swarmflow.record.events import EventBase

    monkeypatch.delenv("SWARMFLOW_VALIDATE_EVENTS", raising=False)  # production's fast path
    built: list[type] = []
    validate = EventBase.model_validate.__func__

    def counting(cls: type[EventBase], obj: object, *args: object, **kw: object) -> EventBase:
        built.append(cls)
        return validate(cls, obj, *args, **kw)

    monkeypatch.setattr(EventBase, "model_validate", classmethod(counting))
    result = await run_one(
        [Agent("a")],
        lambda: parallel(lambda i: agent("a", f"task {i}"), n=3),
        ScriptedModel(["x", "y", "z"]),
    )
    assert result.status == "ok"
    assert built == []  # the run kept its events without building a model of each
    kept = result.events
    assert kept == list(read_events(result.events_path))
    assert [e.seq for e in kept] == list(range(len(kept)))
    assert kept[-1].type == "run_finished"


async def test_the_run_directory_keeps_its_log_whatever_sinks_are_given(tmp_path: Path) -> None:
    """A list of sinks of one's own adds where the events go; the run's `events.jsonl` is
    written all the same, once, also when one of the given sinks is that very file."""
    own = MemorySink()
    result = await run_one([Agent("a")], lambda: agent("a", "go"), ScriptedModel(["done"]),
                           events=[own], runs_root=tmp_path)  # fmt: skip
    logged = [e.seq for e in read_events(result.run_dir / EVENTS_FILE)]
    assert logged == [e.seq for e in own.events] and logged

    again = tmp_path / "again"
    theirs = JsonlSink(again / EVENTS_FILE)
    result = await run_one([Agent("a")], lambda: agent("a", "go"), ScriptedModel(["done"]),
                           events=[theirs], runs_root=tmp_path, run_id="again")  # fmt: skip
    seqs = [e.seq for e in read_events(result.run_dir / EVENTS_FILE)]
    assert seqs == list(range(len(seqs))) and seqs  # each event once, in order
