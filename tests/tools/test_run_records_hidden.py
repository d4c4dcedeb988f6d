"""An agent whose `local` workspace holds the runs root (a repository run from its own root
keeps its runs in `./runs`) sees no run's records: not its own run's journal, event log or
board token, not another run's files. Attacked through the real tools of a real run
(FunctionModel); the shell attacks skip with the reason when bubblewrap is missing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, agent
from swarmflow.core.messages import ModelRequest
from swarmflow.runner.result import RunResult
from swarmflow.testing import FunctionModel, tool_call
from swarmflow.tools.sandbox import bwrap_problem

from ..runtime.helpers import of_type, run_one
from ..support.git_repo import make_repo

PROBLEM = bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")
RUN_ID = "r1"
OTHER_RUN = "OTHER-RUN-JOURNAL-CANARY"
FORGED = '{"forged": 1}'
REFUSED = "'runs' holds swarmflow's run records"

Step = Callable[[str], Any]
"""One scripted model reply, given the run's board token (read from its `board.json`)."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding its runs root, with an earlier run's journal and a link to it."""
    path = make_repo(tmp_path)
    earlier = path / "runs" / "old"
    earlier.mkdir(parents=True)
    (earlier / "journal.jsonl").write_text(json.dumps({"canary": OTHER_RUN}) + "\n")
    (path / "runs-link").symlink_to("runs")
    return path


class Hostile:
    """A model that plays `steps`, then answers "done"; it keeps what it was shown."""

    def __init__(self, repo: Path, steps: list[Step]) -> None:
        self.board = repo / "runs" / RUN_ID / "board.json"
        self.steps: Iterator[Step] = iter(steps)
        self.token = ""
        self.shown: list[str] = []

    def __call__(self, request: ModelRequest) -> Any:
        self.token = self.token or json.loads(self.board.read_text())["token"]
        self.shown = [m.content for m in request.messages if m.role == "tool"]
        step = next(self.steps, None)
        return "done" if step is None else step(self.token)


async def _attack(repo: Path, hostile: Hostile, tools: list[str], **declared: Any) -> RunResult:
    attacker = Agent("hostile", tools=tools, workspace="local", max_steps=30, **declared)
    return await run_one(
        [attacker],
        lambda: agent("hostile", "attack"),
        FunctionModel(hostile),
        repo=repo,
        runs_root=repo / "runs",
        run_id=RUN_ID,
        board_port=0,  # the run's board is served: its token lies in runs/r1/board.json
        budget={"seconds": 120},
    )


def _journal_lines(repo: Path) -> list[str]:
    return (repo / "runs" / RUN_ID / "journal.jsonl").read_text().splitlines()


async def test_the_file_tools_refuse_and_skip_the_runs_root(repo: Path) -> None:
    steps: list[Step] = [
        lambda _: tool_call("read_file", path=f"runs/{RUN_ID}/board.json"),
        lambda _: tool_call("read_file", path="runs/old/journal.jsonl"),
        lambda _: tool_call("read_file", path=f"runs-link/{RUN_ID}/board.json"),
        lambda _: tool_call("list_files", path="."),
        lambda _: tool_call("list_files", path="runs"),
        lambda token: tool_call("search", pattern=f"{token}|{OTHER_RUN}"),
        lambda _: tool_call("search", pattern="token", path=f"runs/{RUN_ID}"),
        lambda _: tool_call("write_file", path=f"runs/{RUN_ID}/journal.jsonl", content=FORGED),
        lambda _: tool_call(
            "edit", path=f"runs/{RUN_ID}/events.jsonl", old="run_started", new="forged"
        ),
    ]
    hostile = Hostile(repo, steps)
    tools = ["read_file", "write_file", "edit", "list_files", "search"]
    result = await _attack(repo, hostile, tools)
    assert result.status == "ok", result.error
    shown = hostile.shown
    assert len(shown) == len(steps)
    answers = shown[:5] + shown[6:]  # the search's answer repeats its pattern
    assert hostile.token and not any(hostile.token in text for text in answers)
    assert not any(OTHER_RUN in text for text in answers)
    for refused in (0, 1, 2, 4, 6, 7, 8):
        assert REFUSED in shown[refused], shown[refused]
    assert shown[3].splitlines() == ["README.md", "app.py"]
    assert shown[5] == f"no matches for '{hostile.token}|{OTHER_RUN}'"
    assert [e.ok for e in of_type(result, "tool_executed")] == [
        False, False, False, True, False, True, False, False, False,
    ]  # fmt: skip
    assert FORGED not in _journal_lines(repo)
    assert (repo / "runs" / "old" / "journal.jsonl").read_text().count(OTHER_RUN) == 1


@needs_bwrap
async def test_the_sandboxed_shell_finds_no_run_records(repo: Path) -> None:
    steps: list[Step] = [
        lambda _: tool_call(
            "run_shell",
            command="cat runs/*/journal.jsonl runs/*/board.json runs-link/*/events.jsonl; "
            "ls -A runs; find . -name '*.jsonl' -o -name board.json; echo END",
        ),
        lambda _: tool_call(
            "run_shell",
            command=f"sed -i '1s/^/FORGED/' runs/{RUN_ID}/journal.jsonl; "
            f"echo '{FORGED}' >> runs/{RUN_ID}/journal.jsonl; "
            f"mkdir -p runs/{RUN_ID} && echo '{FORGED}' > runs/{RUN_ID}/journal.jsonl; echo END",
        ),
    ]
    hostile = Hostile(repo, steps)
    result = await _attack(repo, hostile, ["run_shell"], sandbox="bwrap")
    assert result.status == "ok", result.error
    looked, forged = hostile.shown
    assert hostile.token not in looked and OTHER_RUN not in looked
    assert "'runs/*/journal.jsonl': No such file" in looked
    assert looked.endswith("events.jsonl': No such file or directory\nEND\n")  # ls, find: none
    assert "No such file" in forged and "Read-only file system" in forged
    lines = _journal_lines(repo)
    assert lines and all(line.startswith("{") for line in lines) and FORGED not in lines
    assert (repo / "runs" / "old" / "journal.jsonl").read_text().count(OTHER_RUN) == 1


async def test_the_host_shell_is_not_pointed_at_the_runs_root(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARMFLOW_RUNS", str(repo / "runs"))
    monkeypatch.setenv("OLDPWD", str(repo / "runs"))
    hostile = Hostile(repo, [lambda _: tool_call("run_shell", command="env; pwd")])
    result = await _attack(repo, hostile, ["run_shell"], sandbox="none")
    assert result.status == "ok", result.error
    (shown,) = hostile.shown
    assert "SWARMFLOW_RUNS" not in shown and "OLDPWD" not in shown
    assert f"PWD={repo}\n" in shown and shown.endswith(f"\n{repo}\n")


async def test_a_workspace_inside_the_run_directory_is_usable(tmp_path: Path) -> None:
    # Without a repository, a `local` workspace is the run directory's `workspace/`.
    steps = iter(
        [
            tool_call("write_file", path="notes/a.txt", content="kept\n"),
            tool_call("list_files", path="."),
            tool_call("search", pattern="kept"),
            tool_call("run_shell", command="cat notes/a.txt"),
            "done",
        ]
    )
    shown: list[str] = []

    def policy(request: ModelRequest) -> Any:
        shown[:] = [m.content for m in request.messages if m.role == "tool"]
        return next(steps)

    worker = Agent("worker", tools=["write_file", "list_files", "search", "run_shell"],
                   workspace="local")  # fmt: skip
    result = await run_one(
        [worker], lambda: agent("worker", "go"), FunctionModel(policy), runs_root=tmp_path
    )
    assert result.status == "ok", result.error
    assert result.run_dir.parent == tmp_path
    assert shown == [
        "wrote 5 bytes (1 lines) to notes/a.txt",
        "notes/a.txt",
        "notes/a.txt:1: kept",
        "exit code: 0\nkept\n",
    ]
