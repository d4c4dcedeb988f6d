"""Small things a first hour ran into, each fixed and held here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
