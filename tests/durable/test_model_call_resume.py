"""Resume pays only from the first unfinished model call: a real SIGKILL inside an agent call
after k of its n model calls settled, then a resume that makes exactly n - k model calls and
pays 0 tokens for the first k (replayed from the journal, `model_called` with payment
"replayed"); the call in flight when the process died is paid again ("repaid").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from swarmflow import run_sync
from swarmflow.core.messages import ModelRequest
from swarmflow.durable.run_log import read_log as scan_log
from swarmflow.record.events import ModelCalled
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
    result = run_sync(target.work(mode, summariser), model=worker, repo=kwargs.pop("repo"),
                      context_tokens=target.CONTEXT_TOKENS, **kwargs)  # fmt: skip
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
