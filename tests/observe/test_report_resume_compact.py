"""The report of a run that resumed, that compacted its outcomes, and of a Team run's graph."""

from __future__ import annotations

from pathlib import Path

from swarmflow import Agent, Team, agent, compact, flow, parallel, run, team
from swarmflow.core.errors import ModelUnavailable
from swarmflow.core.messages import ModelRequest
from swarmflow.record.events import RunResumed
from swarmflow.report import render_report
from swarmflow.report.graphs import run_diagram
from swarmflow.report.timeline import timeline
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import run_one

TEAM = Team([Agent("w")])


@flow(team=TEAM)
async def three_steps() -> str:
    first = await agent("w", "step one")
    second = await agent("w", f"step two after {first.text}")
    return (await agent("w", f"step three after {second.text}")).text


def answering(fail_at: str | None = None) -> FunctionModel:
    def answer(request: ModelRequest) -> str:
        prompt = request.messages[-1].content or ""
        if fail_at is not None and fail_at in prompt:
            raise ModelUnavailable("the endpoint went away")
        return f"done: {prompt[:9]}"

    return FunctionModel(answer)


async def test_a_resumed_run_says_where_it_resumed_and_what_each_process_spent(
    tmp_path: Path,
) -> None:
    failed = await run(three_steps, model=answering("step three"), runs_root=tmp_path,
                       raise_on_failure=False)  # fmt: skip
    assert failed.status == "failed"
    done = await run(three_steps, model=answering(), resume=failed.run_dir)
    assert done.status == "ok"
    events = list(done.events)

    # The clock goes on: no event of the resumed process is stamped before the earlier ones.
    resumed_at = next(e.t for e in events if isinstance(e, RunResumed))
    before = [e.t for e in events if e.seq < next(e.seq for e in events if e.type == "run_resumed")]
    assert resumed_at >= max(before)
    assert [e.t for e in events] == sorted(e.t for e in events)
    (line,) = [e for e in timeline(events) if e.kind == "resume"]
    assert "resumed here" in line.text and "2 recorded calls" in line.text

    text = render_report(events)
    assert "Resumed 1 time" in text
    assert "2 of 2 recorded calls replayed" in text
    assert "resumed here in a new process" in text  # on the text timeline too

    # The result says this process's spend and the whole run's, and the whole run's is what
    # `swarmflow runs` lists.
    assert done.tokens > 0 and done.earlier_tokens > 0
    assert done.total_tokens == done.tokens + done.earlier_tokens
    model_calls = [e for e in events if e.type == "model_called"]
    assert done.total_tokens == sum(e.tokens_in + e.tokens_out for e in model_calls)
    assert f"then 1 new calls, {done.tokens:,} tokens" in text


@flow(team=TEAM)
async def keeps_the_useful() -> list[str]:
    outcomes = await parallel(lambda i: agent("w", f"idea {i}"), n=3)
    return [o.text for o in compact(outcomes)]


async def test_the_report_says_what_compact_dropped_and_why() -> None:
    def answer(request: ModelRequest) -> str:
        return "" if "idea 1" in (request.messages[-1].content or "") else "an idea"

    result = await run(keeps_the_useful, model=FunctionModel(answer))
    assert result.output == ["an idea", "an idea"]
    text = render_report(result.events)
    (line,) = [line for line in text.splitlines() if "dropped outcome" in line]
    assert "1" in line and "empty" in line


async def test_the_graph_of_a_team_run_shows_its_roles_and_who_talked_to_whom() -> None:
    def policy(req: ModelRequest) -> object:
        last = req.messages[-1]
        if req.agent == "coder":
            return "add is written"
        if last.role != "tool":
            return tool_call("message_agent", to="coder", text="write add")
        return f"final: {last.content}"

    roles = [Agent("lead", tools=["message_agent", "submit"]), Agent("coder")]
    result = await run_one(roles, lambda: team("go", lead="lead"), FunctionModel(policy),
                           edges=[("lead", "coder"), ("coder", "lead")])  # fmt: skip
    events = list(result.events)
    mermaid = run_diagram(events, "run", "mermaid")
    assert '(["lead"])' in mermaid and '(["coder"])' in mermaid
    assert '-- "1 message" -->' in mermaid
    dot = run_diagram(events, "run", "dot")
    assert '"role:lead" -> "role:coder" [label="1 message"];' in dot
    assert dot.rstrip().endswith("}")
