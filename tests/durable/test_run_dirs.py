"""Run directories after the fact: `swarmflow runs`, `swarmflow clean`, write-ahead, fsync."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, RunResult, Team, agent, flow, human, run
from swarmflow.channels import DeferredHuman
from swarmflow.cli import main
from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import ModelRequest
from swarmflow.core.ports import ToolResult
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.testing import FunctionModel, ScriptedModel, tool_call
from swarmflow.tools import ArgsModel, ToolRegistry
from tests.durable.test_failure_keeps_work import git

CODERS = Team(
    [Agent("coder", tools=["write_file", "submit"], workspace="worktree")],
    edges=[("coder", "human")],
)


@flow(team=CODERS)
async def code_then_ask() -> object:
    work = await agent("coder", "change a.txt")
    return await human("Keep it?", payload=work.text)


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "start")
    return path


def coding_model() -> ScriptedModel:
    return ScriptedModel(
        [tool_call("write_file", path="a.txt", content="two\n"), tool_call("submit", summary="ok")]
    )


def paused_run(repo: Path, root: Path) -> RunResult:
    result: RunResult = anyio.run(
        lambda: run(
            code_then_ask, model=coding_model(), human=DeferredHuman(), repo=repo, runs_root=root
        )  # fmt: skip
    )
    return result


def test_clean_removes_a_paused_runs_worktrees_and_branches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    paused = paused_run(repo, tmp_path / "runs")
    assert paused.status == "paused"
    assert len(git(repo, "worktree", "list").splitlines()) == 2
    assert main(["runs", str(tmp_path / "runs")]) == 0
    listing = capsys.readouterr().out
    assert paused.run_id in listing and "paused" in listing
    assert main(["clean", str(paused.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "clean: 2 worktrees and branches removed" in out
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "branch", "--list", "swarmflow/*") == ""
    assert (repo / "a.txt").read_text() == "one\n"  # the user's own checkout is untouched


def test_runs_lists_a_killed_run_as_dead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.durable.test_durable_runs import kill_mid_run

    run_dir = kill_mid_run(tmp_path / "runs", 9)
    assert main(["runs", str(tmp_path / "runs")]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if run_dir.name in ln)
    assert line.split()[1] == "dead"


def test_a_live_run_is_neither_cleaned_nor_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = paused_run(make_repo(tmp_path / "repo"), tmp_path / "runs")
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        (first.run_dir / "run.pid").write_text(str(other.pid))
        assert main(["clean", str(first.run_dir)]) == 1
        assert f"still running (process {other.pid})" in capsys.readouterr().err
        with pytest.raises(ConfigError, match="still running"):
            anyio.run(lambda: run(code_then_ask, model=coding_model(), resume=first.run_dir))
    finally:
        assert other.stdin is not None
        other.stdin.close()
        other.wait(timeout=30)


async def test_a_finished_run_or_a_stranger_directory_is_not_resumed(tmp_path: Path) -> None:
    @flow(team=Team([Agent("w")]))
    async def one() -> object:
        return (await agent("w", "hi")).text

    done = await run(one, model=FunctionModel(lambda r: "ok"), runs_root=tmp_path)
    with pytest.raises(ConfigError, match="already finished ok"):
        await run(one, model=FunctionModel(lambda r: "ok"), resume=done.run_dir)
    with pytest.raises(ConfigError, match="not a run directory"):
        await run(one, model=FunctionModel(lambda r: "ok"), resume=tmp_path / "nothing")
    with pytest.raises(ConfigError, match="durability="):
        await run(one, model=FunctionModel(lambda r: "ok"), durability="sometimes")  # type: ignore[arg-type]


def test_a_paused_runs_manifest_is_whole_and_a_torn_one_is_named(tmp_path: Path) -> None:
    paused = paused_run(make_repo(tmp_path / "repo"), tmp_path / "runs")
    manifest = paused.run_dir / "run.json"
    assert manifest.read_text().endswith("}\n")
    assert not list(paused.run_dir.glob(".run.json*"))  # no temporary file left behind
    manifest.write_text("")  # what a kill mid-write used to leave
    with pytest.raises(ConfigError, match=r"run\.json: not a run manifest"):
        anyio.run(lambda: run(code_then_ask, model=coding_model(), resume=paused.run_dir))


async def test_every_record_is_in_the_files_before_the_next_model_call(tmp_path: Path) -> None:
    @flow(team=Team([Agent("w")]))
    async def chain() -> object:
        first = await agent("w", "one")
        return (await agent("w", f"two after {first.text}")).text

    seen: list[tuple[str, str]] = []

    def policy(req: ModelRequest) -> str:
        (run_dir,) = (tmp_path / "runs").iterdir()
        journal = (run_dir / JOURNAL_FILE).read_text()
        events = (run_dir / EVENTS_FILE).read_text()
        seen.append((journal, events))
        return "answer"

    result = await run(chain, model=FunctionModel(policy), runs_root=tmp_path / "runs")
    assert result.status == "ok"
    journal, events = seen[1]  # as the second model call starts
    assert '"kind":"call_finished"' in journal and '"given":"one"' in journal
    assert events.count('"type":"model_called"') == 1
    assert events.endswith("\n")


async def test_fsync_durability_syncs_before_every_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line made before an effect is written and synced as the effect starts; the lines
    made between two effects share one write and one sync."""
    synced: dict[int, int] = {}  # file descriptor -> its size at its last fsync
    syncs: list[int] = []
    real = os.fsync

    def recording(fd: int) -> None:
        real(fd)
        synced[fd] = os.fstat(fd).st_size
        syncs.append(fd)

    monkeypatch.setattr(os, "fsync", recording)
    unsynced: list[str] = []

    def check_synced() -> None:
        (run_dir,) = tmp_path.iterdir()
        for name in (EVENTS_FILE, JOURNAL_FILE):
            size = (run_dir / name).stat().st_size
            if size not in synced.values():
                unsynced.append(f"{name} at {size} bytes")

    def policy(req: ModelRequest) -> object:
        check_synced()
        if req.messages[-1].role == "tool":
            return "ok"
        return tool_call("check_disk")

    class CheckDisk:
        name = "check_disk"
        description = "checks that what came before it is synced"
        args = _NoArgs
        needs_workspace = False

        async def run(self, args: object, ctx: object) -> ToolResult:
            check_synced()
            return ToolResult("checked")

    @flow(team=Team([Agent("w", tools=["check_disk"])]))
    async def one() -> object:
        first = (await agent("w", "hi")).text
        return (await agent("w", f"again after {first}")).text

    result = await run(one, model=FunctionModel(policy), runs_root=tmp_path,
                       durability="fsync", tools=ToolRegistry([CheckDisk()]))  # fmt: skip
    assert result.status == "ok", result.error
    assert not unsynced, unsynced
    lines = len((result.run_dir / EVENTS_FILE).read_text().splitlines())
    records = len((result.run_dir / JOURNAL_FILE).read_text().splitlines())
    effects = 6  # two calls, each: model, tool, model
    # At most one sync per file at each barrier (the six effects, the run's start and its
    # end) and at the close: every model call journals its start, so the journal syncs at
    # each barrier before a model call as the event log does.
    assert len(syncs) <= 2 * (effects + 3) < lines + records


class _NoArgs(ArgsModel):
    """No arguments."""


def test_the_cli_resumes_a_killed_python_flow_from_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.durable.test_durable_runs import finished_prompts, kill_mid_run

    run_dir = kill_mid_run(tmp_path / "runs", 9)
    done = len(finished_prompts(run_dir))
    assert main(["resume", str(run_dir), "--demo"]) == 0
    out = capsys.readouterr().out
    assert "status: ok" in out and f"replayed: {done} finished calls" in out


def test_resume_says_when_the_flow_cannot_be_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.durable.test_durable_runs import kill_mid_run

    run_dir = kill_mid_run(tmp_path / "runs", 9)
    manifest = run_dir / "run.json"
    manifest.write_text(manifest.read_text().replace(":busy", ":gone"))
    assert main(["resume", str(run_dir), "--demo"]) == 2
    err = capsys.readouterr().err
    assert "cannot load the run's flow" in err and "defines no 'gone'" in err
    assert main(["resume", str(run_dir)]) == 2  # and no model recorded or chosen
