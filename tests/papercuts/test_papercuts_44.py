"""Small things a first hour ran into, each fixed and held here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelResponse, ToolCall
from swarmflow.experiments.runread import END_REASONS, AssignedAxes, read_run
from swarmflow.testing import FunctionModel

LOOPER = Team([Agent("looper", tools=["list_files"], workspace="local")])


@flow(team=LOOPER)
async def loops() -> str:
    return (await agent("looper", "look around")).text


def _same_call_forever(request: Any) -> Any:
    return ModelResponse(tool_calls=(ToolCall(f"c{len(request.messages)}", "list_files", "{}"),))


async def test_a_loop_blocked_run_ends_under_loop_block_not_step_limit(tmp_path: Path) -> None:
    result = await run(loops, model=FunctionModel(_same_call_forever), runs_root=tmp_path,
                       repo=tmp_path / "repo", raise_on_failure=False)  # fmt: skip
    assert "loop block" in END_REASONS
    facts = read_run(result.run_dir, AssignedAxes())
    assert facts.end_reason == "loop block", result.status


READER = Team([Agent("reader", tools=["read_file"], workspace="local")])


@flow(team=READER)
async def reads(path: str) -> str:
    return (await agent("reader", f"read {path}")).text


async def _read_result(path: str, runs: Path) -> str:
    seen: list[str] = []

    def policy(request: Any) -> Any:
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if not results:
            call = ToolCall("c1", "read_file", f'{{"path": "{path}"}}')
            return ModelResponse(tool_calls=(call,))
        seen.append(results[-1])
        return "done"

    await run(reads, path=path, model=FunctionModel(policy), runs_root=runs)
    return seen[0]


async def test_read_file_of_no_path_or_a_folder_says_what_to_do(tmp_path: Path) -> None:
    empty = await _read_result("", tmp_path)
    assert empty == (
        "read_file needs the path of a file ('' names the workspace root); "
        "use list_files to see what it holds"
    )
    for folder in (".", "./"):
        said = await _read_result(folder, tmp_path)
        assert "is a directory; use list_files" in said and "internal error" not in said


def test_experience_takes_store_after_the_action_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from swarmflow.cli import main

    store = tmp_path / "notes.db"
    for argv in (["experience", "list", "--store", str(store)],
                 ["experience", "--store", str(store), "list"],
                 ["experience", "--store", "elsewhere.db", "show", "1", "--store", str(store)]):  # fmt: skip
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"no experience store at {store}" in err and "usage:" not in err, argv


def test_the_text_timeline_is_in_the_order_things_started(tmp_path: Path) -> None:
    import json

    from swarmflow.report import read_log, report_of

    base = {"run_id": "r1", "ts": 0.0, "agent": "a", "session": "a#1"}
    events = [
        {"type": "run_started", "seq": 0, "t": 0.0, "flow": "f", "agent": None, "session": None},
        {"type": "session_started", "seq": 1, "t": 0.1},
        # a tool that ran from 0.9 s to 1.0 s, recorded before a model call that ran from
        # 0.5 s to 2.0 s (each event is written when its work ends)
        {"type": "tool_executed", "seq": 2, "t": 1.0, "tool": "read_file", "duration": 0.1},
        {"type": "model_called", "seq": 3, "t": 2.0, "step": 1, "latency": 1.5},
    ]
    lines = [json.dumps({**base, **e}) for e in events]
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    text = report_of(read_log(tmp_path), tmp_path)
    timeline = text[text.index("Timeline") :].splitlines()[1:4]
    starts = [float(line.split("s", 1)[0]) for line in timeline]
    assert starts == sorted(starts) and any("model call 1" in line for line in timeline)


SHELLER = Team([Agent("sheller", tools=["run_shell"], workspace="local")])


@flow(team=SHELLER)
async def shells() -> str:
    return (await agent("sheller", "run something")).text


def _one_command(request: Any) -> Any:
    if any(m.role == "tool" for m in request.messages):
        return "done"
    return ModelResponse(tool_calls=(ToolCall("c1", "run_shell", '{"command": "true"}'),))


async def test_a_missing_sandbox_is_printed_once_and_recorded_in_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from swarmflow.tools import shell

    problem = "bubblewrap (bwrap) is not installed (as this test pretends)"
    monkeypatch.setattr(shell, "bwrap_problem", lambda: problem)
    monkeypatch.setattr(shell, "_TOLD", set())  # as in a process of its own
    results = [await run(shells, model=FunctionModel(_one_command), runs_root=tmp_path)
               for _ in range(3)]  # fmt: skip
    printed = [r for r in caplog.records if problem in r.getMessage()]
    assert len(printed) == 1
    for result in results:
        assert [e.type for e in result.events if e.type == "sandbox_unavailable"] == [
            "sandbox_unavailable"
        ]


def test_every_built_in_tools_arguments_are_documented() -> None:
    from swarmflow.tools import default_registry

    page = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text()
    table = page.split("## The built-in tools", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2] for line in table.splitlines()
            if line.startswith("| `")}  # fmt: skip
    for spec in default_registry().specs():
        params = spec.parameters or {}
        required = set(params.get("required", []))
        named = [f"`{k}`" if k in required else f"`{k}`?" for k in params.get("properties", {})]
        assert spec.name in rows, f"{spec.name} is not in docs/tools.md"
        assert rows[spec.name].strip() == ", ".join(named), spec.name
    assert set(rows) == {s.name for s in default_registry().specs()}


def test_the_demo_ends_by_saying_what_to_do_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from swarmflow.cli import main

    assert main(["demo", "--runs-dir", str(tmp_path), "--human", "auto"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"next: swarmflow view {tmp_path}  (every run, live")
    assert "swarmflow report " in err[-1] and err[-1].endswith(" --html")
