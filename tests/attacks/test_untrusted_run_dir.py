"""Values read back from a run directory are untrusted: a pid, a count, a cost or a path that is
not what it should be is refused in one line (or, for `run.pid`, means no live run), never a
traceback, a hang, a budget given back, or a process of someone else's taken for the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import ConfigError, Limits, RunResult, run
from swarmflow.cli import main
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.testing import FunctionModel
from tests.attacks.test_forged_journal import attacked_run, coder_then_shell
from tests.attacks.test_malformed_run_dir import (
    BROKEN_FIELDS,
    edit_call_record,
    failed_run,
    one_call,
    resume,
)
from tests.support.git_repo import make_repo

# -- run.pid ------------------------------------------------------------------------------------

GARBAGE_PIDS = {
    "too large for a C long": "99999999999999999999",
    "every process (kill -1)": "-1",
    "the process group (kill 0)": "0",
    "digits with underscores": "1_0",
}


@pytest.mark.parametrize("text", GARBAGE_PIDS.values(), ids=GARBAGE_PIDS.keys())
async def test_a_run_pid_that_is_not_a_pid_means_no_live_run(tmp_path: Path, text: str) -> None:
    run_dir = await failed_run(tmp_path)
    (run_dir / "run.pid").write_text(text)
    again = await resume(run_dir)
    assert again.status == "ok"


def test_a_run_pid_that_is_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    run_dir = anyio.run(failed_run, tmp_path)
    events = run_dir / EVENTS_FILE
    lines = events.read_text().splitlines(keepends=True)
    events.write_text("".join(lines[:-1]))  # no run_finished: it looks killed, maybe live
    os.mkfifo(run_dir / "run.pid")  # reading it would block until a writer came
    argv = [sys.executable, "-m", "swarmflow.cli", "runs", str(tmp_path)]
    # The bound is only there so that a hang fails the test instead of stalling the suite.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "dead" in done.stdout


async def test_a_run_pid_that_is_a_symlink_to_a_device_means_no_live_run(tmp_path: Path) -> None:
    run_dir = await failed_run(tmp_path)
    (run_dir / "run.pid").symlink_to("/dev/zero")
    again = await resume(run_dir)
    assert again.status == "ok"


# -- run.json -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("repo", 5), ("repo", ["/tmp"]), ("repo", "/tmp/\u0000x"), ("flow", 7), ("model", {})],
)
def test_a_manifest_field_of_the_wrong_type_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    repo = make_repo(tmp_path)
    run_dir = anyio.run(attacked_run, repo, "true")
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest[field] = value
    (run_dir / "run.json").write_text(json.dumps(manifest))
    assert main(["resume", str(run_dir), "--demo"]) == 2
    err = capsys.readouterr().err
    assert "run.json: not a run manifest" in err and err.count("\n") == 1
    with pytest.raises(ConfigError, match=r"run\.json: not a run manifest"):
        anyio.run(lambda: run(coder_then_shell, model=FunctionModel(lambda r: "x"), resume=run_dir))


# -- events.jsonl: counts and amounts -------------------------------------------------------------

BAD_NUMBERS = {
    "negative tokens (budget given back)": {"type": "model_called", "tokens_in": -(10**9)},
    "a negative cost": {"type": "model_called", "cost": -100.0},
    "a time that is not a number": {"type": "model_called", "ts": "nan"},
    "a negative sequence number": {"type": "model_called", "seq": -5},
    "a sequence number that is a string": {"type": "model_called", "seq": "7"},
}


@pytest.mark.parametrize("fields", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
async def test_an_event_with_a_count_that_is_not_one_is_named(
    tmp_path: Path, fields: dict[str, Any]
) -> None:
    run_dir = await failed_run(tmp_path)
    events = run_dir / EVENTS_FILE
    last = json.loads(events.read_text().splitlines()[-1])
    event = {"run_id": last["run_id"], "seq": last["seq"] + 1, "ts": last["ts"], "t": last["t"],
             **fields}  # fmt: skip
    with events.open("a") as fh:
        fh.write(json.dumps(event) + "\n")
    number = len(events.read_text().splitlines())
    with pytest.raises(ConfigError, match=rf"events\.jsonl:{number}: not an event: ") as e:
        await resume(run_dir)
    assert "\n" not in str(e.value)


# -- journal.jsonl: a replayed call's spend -------------------------------------------------------

NEGATIVE_SPEND = {
    "negative tokens": {"tokens": -(10**9), "cost": 0.0, "calls": 1},
    "negative calls": {"tokens": 5, "cost": 0.0, "calls": -50},
    "a negative cost": {"tokens": 5, "cost": -99.0, "calls": 1},
}


@pytest.mark.parametrize("spend", NEGATIVE_SPEND.values(), ids=NEGATIVE_SPEND.keys())
async def test_a_recorded_spend_below_zero_gives_no_budget_back(
    tmp_path: Path, spend: dict[str, Any]
) -> None:
    run_dir = await failed_run(tmp_path)
    number = edit_call_record(run_dir / JOURNAL_FILE, lambda r: r.update(spend=spend))
    with pytest.raises(ConfigError, match=rf"journal\.jsonl:{number}: not a journal record: "):
        await run(one_call, model=FunctionModel(lambda r: "ok"), resume=run_dir,
                  budget=Limits(calls=5))  # fmt: skip


async def test_negative_usage_in_a_record_is_named(tmp_path: Path) -> None:
    run_dir = await failed_run(tmp_path)
    number = edit_call_record(run_dir / JOURNAL_FILE, lambda r: r["usage"].update(output=-7))
    with pytest.raises(ConfigError, match=rf"journal\.jsonl:{number}: .*usage.*negative"):
        await resume(run_dir)


async def test_a_live_pid_of_another_process_still_refuses_resume(tmp_path: Path) -> None:
    run_dir = await failed_run(tmp_path)
    async with await anyio.open_process(
        [sys.executable, "-c", "import sys; sys.stdin.read()"]
    ) as other:
        (run_dir / "run.pid").write_text(f"{other.pid}\n")  # written after it started: live
        with pytest.raises(ConfigError, match=rf"still running \(process {other.pid}\)"):
            await resume(run_dir)
        assert other.stdin is not None
        await other.stdin.aclose()
    again: RunResult = await resume(run_dir)
    assert again.status == "ok"


@pytest.mark.parametrize(("chosen", "change"), BROKEN_FIELDS.values(), ids=BROKEN_FIELDS.keys())
def test_the_cli_names_each_broken_record_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chosen: Any, change: Any
) -> None:
    """The cases the records' models already refuse, through `swarmflow resume` too."""
    run_dir = anyio.run(failed_run, tmp_path, chosen)
    number = edit_call_record(run_dir / JOURNAL_FILE, change)
    assert main(["resume", str(run_dir), "--demo"]) == 2
    err = capsys.readouterr().err
    assert f"journal.jsonl:{number}: not a journal record: " in err
    assert err.count("\n") == 1
