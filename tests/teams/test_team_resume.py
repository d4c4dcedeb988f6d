"""A Team run is journaled like any other: a resumed run replays its finished turns."""

from __future__ import annotations

from pathlib import Path

from swarmflow import Agent, Team, flow, run, team
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call

CREW = Team(
    [Agent("lead", tools=["message_agent", "submit"]), Agent("coder")],
    edges=[("lead", "coder")],
)
broken = [True]


@flow(team=CREW)
async def shipped() -> str:
    answer = (await team("ship add", lead="lead")).answer
    if broken[0]:
        raise RuntimeError("the flow's own code failed after the team")
    return answer


def _policy(req: ModelRequest) -> object:
    last = req.messages[-1]
    if req.agent == "coder":
        return "add is coded"
    if last.role != "tool":
        return tool_call("message_agent", to="coder", text="write add")
    return tool_call("submit", summary=f"shipped: {last.content}")


async def test_a_resumed_team_run_replays_its_turns_without_model_calls(tmp_path: Path) -> None:
    broken[0] = True
    first = await run(shipped, model=FunctionModel(_policy), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.events_path is not None
    broken[0] = False
    again = FunctionModel(_policy)
    resumed = await run(shipped, model=again, resume=first.events_path.parent,
                        raise_on_failure=False)  # fmt: skip
    assert resumed.status == "ok" and resumed.output == "shipped: add is coded"
    assert again.requests == []  # every finished turn came back from the journal
    events = resumed.events  # the whole run's: the first process's, then this one's
    since = next(i for i, e in enumerate(events) if e.type == "run_resumed")
    assert [e.type for e in events[since:]].count("call_replayed") >= 1
    assert [e.reason for e in events[since:] if e.type == "team_ended"] == ["submitted"]
