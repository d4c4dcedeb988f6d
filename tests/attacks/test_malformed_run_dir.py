"""A malformed run directory is refused with the file and line that are wrong, never a traceback
from deep inside the resume: records that are JSON but not records, fields of the wrong type."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, ConfigError, RunResult, Team, agent, agent_session, flow, run
from swarmflow.cli import main
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.runtime.flow import Flow
from swarmflow.testing import FunctionModel

broken = [True]


@flow(team=Team([Agent("w")]))
async def one_call() -> str:
    text = (await agent("w", "hi")).text
    if broken[0]:
        raise RuntimeError("the flow's own code failed after the call")
    return text


@flow(team=Team([Agent("w")]))
async def one_turn() -> str:
    async with agent_session("w") as w:
        text = (await w.send("hi")).text
    if broken[0]:
        raise RuntimeError("the flow's own code failed after the turn")
    return text


async def failed_run(root: Path, chosen: Flow[..., str] = one_call) -> Path:
    broken[0] = True
    first: RunResult = await run(chosen, model=FunctionModel(lambda r: "ok"), runs_root=root,
                                 raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    return first.run_dir


def append_line(path: Path, line: str) -> int:
    """Append `line`; its 1-based line number."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return len(path.read_bytes().splitlines())


async def resume(run_dir: Path, chosen: Flow[..., str] = one_call) -> RunResult:
    return await run(chosen, model=FunctionModel(lambda r: "ok"), resume=run_dir)


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
    number = append_line(run_dir / JOURNAL_FILE, line)
    with pytest.raises(ConfigError, match=rf"journal\.jsonl:{number}: "):
        await resume(run_dir)


def edit_call_record(path: Path, change: Callable[[dict[str, Any]], None]) -> int:
    """Change the journal's `call_finished` record on disk; its 1-based line number."""
    lines = path.read_text(encoding="utf-8").splitlines()
    (number,) = [n for n, line in enumerate(lines, 1) if '"kind":"call_finished"' in line]
    record = json.loads(lines[number - 1])
    change(record)
    lines[number - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return number


BROKEN_FIELDS: dict[str, tuple[Flow[..., str], Callable[[dict[str, Any]], None]]] = {
    "spend a list": (one_call, lambda r: r.update(spend=[3, 0.0, 1])),
    "patch a string": (one_call, lambda r: r.update(patch="diff --git a/x b/x")),
    "provenance a number": (one_call, lambda r: r.update(provenance=7)),
    "usage with an unknown field": (one_call, lambda r: r["usage"].update(reasoning=12)),
    "a message without a role": (one_turn, lambda r: r["messages"][0].pop("role")),
    "a turn's spend a list": (one_turn, lambda r: r.update(spend=[3, 0.0, 1])),
}


@pytest.mark.parametrize(("chosen", "change"), BROKEN_FIELDS.values(), ids=BROKEN_FIELDS.keys())
async def test_a_call_record_with_a_field_of_the_wrong_shape_is_named(
    tmp_path: Path, chosen: Flow[..., str], change: Callable[[dict[str, Any]], None]
) -> None:
    run_dir = await failed_run(tmp_path, chosen)
    number = edit_call_record(run_dir / JOURNAL_FILE, change)
    with pytest.raises(ConfigError, match=rf"journal\.jsonl:{number}: not a journal record: ") as e:
        await resume(run_dir, chosen)
    assert "\n" not in str(e.value)


def test_the_cli_names_a_broken_call_record_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = anyio.run(failed_run, tmp_path)
    number = edit_call_record(run_dir / JOURNAL_FILE, BROKEN_FIELDS["spend a list"][1])
    assert main(["resume", str(run_dir), "--demo"]) == 2
    err = capsys.readouterr().err
    assert f"journal.jsonl:{number}: not a journal record: call_finished.spend: " in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "human_answered", "run_id": "r", "seq": 0, "ts": 0, "t": 0, "token": 7}',
        '{"type": "board_message_posted", "run_id": "r", "seq": 0, "ts": 0, "t": 0}',
        '{"type": "mention_delivered", "run_id": "r", "seq": 0, "ts": 0, "t": 0, '
        '"thread": "t", "sender": "a", "recipient": "b", "message_seq": 1, "mode": "shouted"}',
    ],
)
async def test_an_event_a_resume_takes_that_is_not_one_is_named(tmp_path: Path, line: str) -> None:
    run_dir = await failed_run(tmp_path)
    number = append_line(run_dir / EVENTS_FILE, line)
    with pytest.raises(ConfigError, match=rf"events\.jsonl:{number}: not an event: "):
        await resume(run_dir)


@pytest.mark.parametrize("line", ["[1, 2]", "42", '{"type": "model_called", "seq": "x"}'])
async def test_an_event_line_that_is_not_an_event_is_named(tmp_path: Path, line: str) -> None:
    run_dir = await failed_run(tmp_path)
    number = append_line(run_dir / EVENTS_FILE, line)
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
    lines = (run_dir / EVENTS_FILE).read_bytes().splitlines()
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
