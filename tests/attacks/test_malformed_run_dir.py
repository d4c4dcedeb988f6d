"""A malformed run directory is refused with the file and line that are wrong, never a traceback
from deep inside the resume: records that are JSON but not records, fields of the wrong type."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, ConfigError, RunResult, Team, agent, flow, run
from swarmflow.testing import FunctionModel

broken = [True]


@flow(team=Team([Agent("w")]))
async def one_call() -> str:
    text = (await agent("w", "hi")).text
    if broken[0]:
        raise RuntimeError("the flow's own code failed after the call")
    return text


async def failed_run(root: Path) -> Path:
    broken[0] = True
    first: RunResult = await run(one_call, model=FunctionModel(lambda r: "ok"), runs_root=root,
                                 raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    return first.run_dir


def append_line(path: Path, line: str) -> int:
    """Append `line`; its 1-based line number."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return len(path.read_bytes().splitlines())


async def resume(run_dir: Path) -> RunResult:
    return await run(one_call, model=FunctionModel(lambda r: "ok"), resume=run_dir)


@pytest.mark.parametrize(
    "line",
    [
        "[1, 2, 3]",
        '"a string"',
        '{"kind": "call_finished"}',
        '{"kind": "call_finished", "key": {"branch": "", "index": "first", "agent": "w", '
        '"digest": "x"}}',
        '{"kind": "call_started", "key": 7}',
        '{"kind": "human_answered"}',
    ],
)
async def test_a_journal_record_that_is_not_one_is_named(tmp_path: Path, line: str) -> None:
    run_dir = await failed_run(tmp_path)
    number = append_line(run_dir / "journal.jsonl", line)
    with pytest.raises(ConfigError, match=rf"journal\.jsonl:{number}: "):
        await resume(run_dir)


@pytest.mark.parametrize("line", ["[1, 2]", "42", '{"type": "model_called", "seq": "x"}'])
async def test_an_event_line_that_is_not_an_event_is_named(tmp_path: Path, line: str) -> None:
    run_dir = await failed_run(tmp_path)
    number = append_line(run_dir / "events.jsonl", line)
    with pytest.raises(ConfigError, match=rf"events\.jsonl:{number}: "):
        await resume(run_dir)


@pytest.mark.parametrize("text", ["[]", '"run"', "null"])
async def test_a_manifest_that_is_not_an_object_is_named(tmp_path: Path, text: str) -> None:
    run_dir = await failed_run(tmp_path)
    (run_dir / "run.json").write_text(text)
    with pytest.raises(ConfigError, match=r"run\.json: not a run manifest"):
        await resume(run_dir)


async def test_a_valid_run_dir_still_resumes(tmp_path: Path) -> None:
    run_dir = await failed_run(tmp_path)
    again = await resume(run_dir)
    assert again.status == "ok" and again.output == "ok"
    lines = (run_dir / "events.jsonl").read_bytes().splitlines()
    assert [json.loads(x)["seq"] for x in lines] == list(range(len(lines)))


async def test_a_stale_pid_file_naming_a_newer_process_does_not_block_resume(
    tmp_path: Path,
) -> None:
    run_dir = await failed_run(tmp_path)
    # A process that started after the killed run wrote its pid file (its pid reused).
    async with await anyio.open_process(
        [sys.executable, "-c", "import sys; sys.stdin.read()"]
    ) as stranger:
        pid_file = run_dir / "run.pid"
        pid_file.write_text(str(stranger.pid))
        os.utime(pid_file, (time.time() - 3600, time.time() - 3600))
        again = await resume(run_dir)
        assert stranger.stdin is not None
        await stranger.stdin.aclose()
    assert again.status == "ok"
