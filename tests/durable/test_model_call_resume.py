"""Resume pays only from the first unfinished model call: a real SIGKILL inside an agent call
after k of its n model calls settled, then a resume that makes exactly n - k model calls and
pays 0 tokens for the first k (replayed from the journal, `model_called` with payment
"replayed"); the call in flight when the process died is paid again ("repaid").
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.core.messages import ModelRequest
from swarmflow.durable.run_log import read_log as scan_log
from swarmflow.experience.store import ExperienceStore
from swarmflow.record.events import ModelCalled
from swarmflow.record.files import JOURNAL_FILE
from swarmflow.report.log import read_log
from swarmflow.testing import FunctionModel
from tests.durable import model_calls_kill_target as target
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    target.make_files(str(root))
    return root


def _calls(events: list[Any]) -> list[ModelCalled]:
    return [e for e in events if isinstance(e, ModelCalled)]


def _paid(calls: list[ModelCalled]) -> int:
    return sum(c.tokens_in + c.tokens_out for c in calls)


def _run(mode: str, tmp: Path, **kwargs: Any) -> tuple[Any, list[ModelRequest]]:
    worker = FunctionModel(target.answer, name="worker-model")
    summariser = FunctionModel(target.summary, name="summariser")
    store = target.experience_of(mode, str(kwargs.pop("store", tmp / "runs")))
    result = run_sync(target.work(mode, summariser), model=worker, repo=kwargs.pop("repo"),
                      context_tokens=target.CONTEXT_TOKENS, experience=store, **kwargs)  # fmt: skip
    return result, [*worker.requests, *summariser.requests]


@pytest.mark.parametrize("mode", ["tools", "summary", "harness"])
def test_a_resumed_agent_call_pays_only_from_its_first_unfinished_model_call(
    tmp_path: Path, mode: str
) -> None:
    whole, whole_asked = _run(mode, tmp_path, repo=_repo(tmp_path / "repo0"),
                              runs_root=tmp_path / "whole")  # fmt: skip
    assert whole.status == "ok", whole.error
    n = len(_calls(whole.events))

    repo = _repo(tmp_path / "repo")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, target.__file__, mode, str(tmp_path / "runs"), str(repo)]
    kill_when_ready(argv, env)
    (run_dir,) = (tmp_path / "runs").iterdir()
    settled = _calls(read_log(run_dir).events)
    k = len(settled)
    assert 0 < k < n
    if mode == "summary":
        assert any(c.purpose == "summary" for c in settled)  # it had compacted with a summary

    resumed, asked = _run(mode, tmp_path, repo=repo, resume=run_dir)
    assert resumed.status == "ok", resumed.error
    assert resumed.output == whole.output
    assert len(asked) == n - k  # exactly the model calls that had not settled
    again = _calls(read_log(run_dir).events)[k:]
    assert [c.payment for c in again[:k]] == ["replayed"] * k
    assert _paid(again[:k]) == 0  # the first k cost nothing
    assert sum(c.recorded_tokens for c in again[:k]) == _paid(settled)
    assert [c.payment for c in again[k:]] == ["repaid"] + ["paid"] * (n - k - 1)
    # What the run paid, both processes together, is what the uninterrupted run paid: so a
    # later resume's ledger starts from the same tokens and calls.
    assert _paid(settled) + _paid(again) == _paid(_calls(whole.events))
    spent = scan_log(run_dir).spent
    assert (spent.tokens, spent.calls) == (_paid(_calls(whole.events)), n)


def test_a_run_killed_in_its_second_reflection_replays_the_first_and_stores_its_notes_once(
    tmp_path: Path,
) -> None:
    mode = "reflection"
    repo = _repo(tmp_path / "repo")  # the reflection's request names it: the same path in both
    whole, _ = _run(mode, tmp_path, repo=repo, runs_root=tmp_path / "whole", store=tmp_path / "w")
    assert whole.status == "ok", whole.error
    reflections = [c for c in _calls(whole.events) if c.purpose == "reflection"]
    assert [c.agent for c in reflections] == ["worker", "checker"]

    shutil.rmtree(repo)
    repo = _repo(repo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, target.__file__, mode, str(tmp_path / "runs"), str(repo)]
    kill_when_ready(argv, env)
    (run_dir,) = (tmp_path / "runs").iterdir()
    settled = _calls(read_log(run_dir).events)
    assert [c.purpose for c in settled][-1] == "reflection"  # the worker's had settled

    resumed, asked = _run(mode, tmp_path, repo=repo, resume=run_dir)
    assert resumed.status == "ok", resumed.error
    assert resumed.output == whole.output
    # Only the checker's reflection, in flight at the kill, went to the model again.
    assert [(r.agent, r.system == target.REFLECT_PROMPT) for r in asked] == [("checker", True)]
    again = [c for c in _calls(read_log(run_dir).events)[len(settled):] if c.purpose == "reflection"]
    assert [(c.agent, c.payment) for c in again] == [("worker", "replayed"), ("checker", "repaid")]
    assert _paid(settled) + _paid(_calls(read_log(run_dir).events)[len(settled):]) == _paid(
        _calls(whole.events)
    )
    # The worker's notes, stored before the kill, are not stored a second time.
    store = ExperienceStore(Path(target.experience_of(mode, str(tmp_path / "runs")) or ""))
    notes = [n.agent for n in store.notes()]
    assert sorted(notes) == ["checker", "worker"]


def test_a_call_whose_model_raised_is_paid_as_new_when_a_resumed_run_sends_it_again(
    tmp_path: Path,
) -> None:
    solo = Team([Agent("worker")])

    @flow(team=solo, name="solo")
    async def solo_flow() -> str:
        return (await agent("worker", "Say done.")).text

    def down(_request: ModelRequest) -> str:
        raise RuntimeError("the server is down")

    failed = run_sync(solo_flow, model=FunctionModel(down), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    assert failed.status == "failed"
    lines = (failed.run_dir / JOURNAL_FILE).read_text().splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[-2:] == ["model_call_started", "model_call_failed"]

    resumed = run_sync(solo_flow, model=FunctionModel(lambda _r: "done"), resume=failed.run_dir)
    assert resumed.status == "ok" and resumed.output == "done"
    # It had raised, not been in flight when a process died: paid as any new call is.
    assert [c.payment for c in _calls(resumed.events)] == ["paid"]
