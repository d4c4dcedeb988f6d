"""Durable runs: a run killed with SIGKILL resumes, replaying every call that had finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from swarmflow import run
from swarmflow.core.events import EventBase, parse_event
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel
from tests.runtime import kill_target

ROOT = Path(__file__).resolve().parents[2]


def kill_mid_run(root: Path, hang_at: int) -> Path:
    """Run kill_target.py in a child and SIGKILL it at its `hang_at`-th model call."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    target = Path(kill_target.__file__)
    child = subprocess.Popen(
        [sys.executable, str(target), str(root), str(hang_at)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    (run_dir,) = root.iterdir()
    return run_dir


def finished_prompts(run_dir: Path) -> set[str]:
    """The prompts of the calls the journal records as finished (the digest's input)."""
    lines = (run_dir / "journal.jsonl").read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    return {r["given"] for r in records if r["kind"] == "call_finished"}


def all_prompts(root: Path) -> set[str]:
    """Every prompt an uninterrupted run sends."""
    seen: set[str] = set()

    def record(req: ModelRequest) -> str:
        seen.add(req.messages[-1].content or "")
        return kill_target.answer(req)

    result = kill_target_run_sync(FunctionModel(record), runs_root=root)
    assert result.status == "ok"
    return seen


def kill_target_run_sync(model: FunctionModel, **kwargs: object) -> object:
    import anyio

    return anyio.run(lambda: run(kill_target.busy, model=model, **kwargs))


def read_log(run_dir: Path) -> list[EventBase]:
    raw = (run_dir / "events.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    return [parse_event(line) for line in raw.splitlines()]


def test_a_killed_run_resumes_and_pays_only_for_unfinished_calls(tmp_path: Path) -> None:
    run_dir = kill_mid_run(tmp_path / "runs", hang_at=23)
    done = finished_prompts(run_dir)
    before = read_log(run_dir)
    assert 10 <= len(done) < 2 * kill_target.BRANCHES
    assert not any(e.type == "run_finished" for e in before)

    asked: list[str] = []

    def counting(req: ModelRequest) -> str:
        asked.append(req.messages[-1].content or "")
        return kill_target.answer(req)

    resumed = kill_target_run_sync(FunctionModel(counting), resume=run_dir)
    reference = kill_target_run_sync(
        FunctionModel(kill_target.answer), runs_root=tmp_path / "reference"
    )
    assert resumed.status == "ok"  # type: ignore[attr-defined]
    assert resumed.output == reference.output  # type: ignore[attr-defined]
    # Exactly the calls that had not finished went to the model, each once.
    assert sorted(asked) == sorted(all_prompts(tmp_path / "all") - done)
    assert len(asked) == len(set(asked))

    log = read_log(run_dir)
    assert [e.seq for e in log] == list(range(len(log)))
    assert {e.run_id for e in log} == {resumed.run_id}  # type: ignore[attr-defined]
    assert [e.type for e in log].count("run_started") == 1
    assert [e.type for e in log].count("run_resumed") == 1
    assert [e.type for e in log].count("call_replayed") == len(done)
    assert log[-1].type == "run_finished"
