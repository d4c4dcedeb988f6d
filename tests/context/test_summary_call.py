"""A summary's model call is a metered call like any other: the rails see it (a veto stops it),
the write barrier puts what came before it on disk first, and it is recorded with its step."""

from __future__ import annotations

import json
from pathlib import Path

from swarmflow import run_sync
from swarmflow.context import SUMMARY_PROMPT
from swarmflow.core.messages import ModelRequest
from swarmflow.rails import Hook, Veto, rail
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel
from tests.durable import model_calls_kill_target as target


def _repo(root: Path) -> Path:
    root.mkdir()
    target.make_files(str(root))
    return root


def _is_summary(request: object) -> bool:
    messages = list(getattr(request, "messages", ()))
    return bool(messages) and messages[0].content == SUMMARY_PROMPT


def test_a_vetoing_rail_stops_a_summary(tmp_path: Path) -> None:
    summariser = FunctionModel(target.summary, name="summariser")
    no_summaries = rail("no summaries", [Hook.BEFORE_MODEL_CALL],
                        lambda ctx: Veto("not now") if _is_summary(ctx.payload) else None)  # fmt: skip
    result = run_sync(target.work("summary", summariser), model=FunctionModel(target.answer),
                      repo=_repo(tmp_path / "repo"), runs_root=tmp_path / "runs",
                      context_tokens=target.CONTEXT_TOKENS, rails=[no_summaries])  # fmt: skip
    assert result.status == "ok", result.error
    assert summariser.requests == []  # nothing was sent
    refused = [e for e in result.events if e.type == "context_level_refused"]
    assert refused and all(e.level == "summarise" for e in refused)  # type: ignore[attr-defined]
    assert "vetoed before_model_call: not now" in refused[0].reason  # type: ignore[attr-defined]
    (vetoed,) = {e.rail for e in result.events if e.type == "rail_vetoed"}  # type: ignore[attr-defined]
    assert vetoed == "no summaries"


def test_a_summarys_events_are_on_disk_before_it_starts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    on_disk: list[list[str]] = []

    def summary(request: ModelRequest) -> str:
        (run_dir,) = runs.iterdir()
        lines = (run_dir / EVENTS_FILE).read_text().splitlines()
        on_disk.append([json.loads(line)["type"] for line in lines])
        return target.summary(request)

    summariser = FunctionModel(summary, name="summariser")
    result = run_sync(target.work("summary", summariser), model=FunctionModel(target.answer),
                      repo=_repo(tmp_path / "repo"), runs_root=runs,
                      context_tokens=target.CONTEXT_TOKENS)  # fmt: skip
    assert result.status == "ok", result.error
    assert on_disk, "the history was never summarised"
    # The read that pressed on the budget ran, and was recorded, before the summary was asked.
    reads = sum(1 for e in result.events if e.type == "tool_executed")
    assert on_disk[0].count("tool_executed") == reads
    (called,) = [e for e in result.events if getattr(e, "purpose", "") == "summary"]
    assert called.step == reads + 1 and called.payment == "paid"  # type: ignore[attr-defined]
