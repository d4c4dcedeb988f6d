"""Adherence read back from the event log, and context compaction that it audits."""

from __future__ import annotations

from pathlib import Path

from swarmflow import Agent, agent
from swarmflow.core.messages import ModelRequest
from swarmflow.record.sinks import read_events
from swarmflow.report.adherence import adherence
from swarmflow.testing import FunctionModel, ScriptedModel, tool_call
from tests.runtime.helpers import of_type, run_one


async def test_adherent_run_reports_every_axis_ok() -> None:
    async def body() -> str:
        code = await agent("coder", "write it")
        return (await agent("reviewer", code)).text

    model = FunctionModel(lambda r: "some code" if r.agent == "coder" else "ok")
    result = await run_one(
        [Agent("coder", allowance=10_000), Agent("reviewer")],
        body,
        model,
        edges=[("coder", "reviewer")],
    )
    report = adherence(read_events(result.events_path))
    assert report.adherent, report.render()
    assert [a.name for a in report.axes] == [
        "participation",
        "delegation",
        "role boundary",
        "budget sharing",
        "information flow",
        "context policy",
    ]
    assert report.axis("participation").realized == {"coder": True, "reviewer": True}


async def test_idle_teammate_and_refused_tools_are_reported() -> None:
    model = ScriptedModel([tool_call("run_shell", command="ls"), "done"])
    result = await run_one(
        [Agent("coder", tools=["read_file"]), Agent("tester")],
        lambda: agent("coder", "go"),
        model,
        edges=[("coder", "tester")],
    )
    report = adherence(result.events)
    assert not report.adherent
    assert report.axis("participation").deviations == ("declared agent 'tester' did no work",)
    assert report.axis("delegation").deviations
    assert report.axis("role boundary").realized == {"refused attempts": 1}
    assert "adherence: NO" in report.render()


async def test_an_edge_back_to_the_lead_does_not_make_the_lead_its_own_delegate() -> None:
    """Only the lead worked; `coder -> lead` (for the coder's answers) is declared too."""
    result = await run_one(
        [Agent("lead"), Agent("coder")],
        lambda: agent("lead", "plan it and do it alone"),
        FunctionModel(lambda r: "done"),
        edges=[("lead", "coder"), ("coder", "lead")],
    )
    axis = adherence(result.events).axis("delegation")
    assert axis.realized == []
    assert axis.deviations == ("no teammate along a declared edge worked",)


async def test_work_passed_back_along_an_edge_counts_the_teammate_once() -> None:
    async def body() -> str:
        plan = await agent("lead", "plan it")
        code = await agent("coder", plan)
        return (await agent("lead", code)).text

    result = await run_one(
        [Agent("lead"), Agent("coder")],
        body,
        FunctionModel(lambda r: f"{r.agent} answer"),
        edges=[("lead", "coder"), ("coder", "lead")],
    )
    axis = adherence(result.events).axis("delegation")
    assert axis.realized == ["coder"] and axis.ok


async def test_context_compaction_fires_and_is_audited(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("line of text\n" * 400)
    reads = iter(range(1, 100))

    def policy(req: ModelRequest) -> object:
        n = next(reads)
        return tool_call("read_file", path="big.txt", offset=n) if n < 8 else "done"

    reader = Agent("r", tools=["read_file"], workspace="local")
    result = await run_one(
        [reader],
        lambda: agent("r", "read"),
        FunctionModel(policy),
        repo=tmp_path,
        context_tokens=3_000,
    )
    compactions = of_type(result, "context_compacted")
    assert compactions and compactions[0].messages_after <= compactions[0].messages_before
    report = adherence(result.events, context_policy=["none"])
    assert report.axis("context policy").deviations
    assert (
        adherence(result.events, context_policy=["elide_observations", "drop_oldest"])
        .axis("context policy")
        .ok
    )
