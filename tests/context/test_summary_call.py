"""A summary's model call is a metered call like any other: the rails see it (a veto stops it),
the write barrier puts what came before it on disk first, and it is recorded with its step."""

from __future__ import annotations

import json
from pathlib import Path

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.context import (
    SUMMARY_PROMPT,
    ContextPolicy,
    Pressure,
    Reduction,
    context_processor,
)
from swarmflow.core.messages import Message, ModelRequest
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


def test_a_users_processor_calls_a_model_through_the_metered_call(tmp_path: Path) -> None:
    """`pressure.around.ask` (docs/api.md): the processor's call is reserved, seen by the
    rails, settled and recorded as the summary's is."""

    @context_processor("condense_by_asking", priority=350)
    async def condense(history: list[Message], pressure: Pressure) -> Reduction | None:
        old = history[1:-2]
        if len(old) < 2:
            return None
        answer = await pressure.around.ask(
            [Message("user", "Condense: " + " ".join(m.content or "" for m in old)[:2000])],
            max_tokens=100,
            level="condense_by_asking",
        )
        if answer is None:
            return None
        kept = [history[0], Message("user", answer.text), *history[-2:]]
        return Reduction(kept, "condensed by a model", answer.cost, answer.usage)

    seen: list[str] = []
    watching = rail("watch", [Hook.BEFORE_MODEL_CALL],
                    lambda ctx: seen.append(ctx.payload.messages[0].content[:9]) or None)  # fmt: skip
    summariser = FunctionModel(lambda r: "- files read: f1 to f3", name="summariser")
    policy = ContextPolicy(processors=("condense_by_asking", "drop_oldest"), summariser=summariser)
    reader = Agent("worker", tools=["read_file"], workspace="local", context=policy)

    @flow(team=Team([reader]))
    async def work() -> str:
        return (await agent("worker", target.TASK)).text

    result = run_sync(work, model=FunctionModel(target.answer), repo=_repo(tmp_path / "repo"),
                      runs_root=tmp_path / "runs", context_tokens=target.CONTEXT_TOKENS,
                      rails=[watching])  # fmt: skip
    assert result.status == "ok", result.error
    assert len(summariser.requests) >= 1 and "Condense:" in seen
    asked = [e for e in result.events if getattr(e, "purpose", "") == "summary"]
    assert len(asked) == len(summariser.requests)
    assert all(e.tokens_in > 0 and e.payment == "paid" for e in asked)  # type: ignore[attr-defined]
    compacted = [e for e in result.events if e.type == "context_compacted"]
    assert any(e.level == "condense_by_asking" and e.cost >= 0 for e in compacted)  # type: ignore[attr-defined]
