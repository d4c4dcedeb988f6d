"""The team ends for each documented reason; a crashed role is a typed failure; mistakes raise."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from swarmflow import Agent, ConfigError, TeamResult, team
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one

EDGES = [("lead", "coder"), ("coder", "lead")]


def _roles(**lead: Any) -> list[Agent]:
    return [Agent("lead", tools=["message_agent", "submit"], **lead), Agent("coder")]


def _delegating(req: ModelRequest) -> object:
    """The lead briefs the coder once, then answers with what came back."""
    last = req.messages[-1]
    if req.agent == "coder":
        return "add is written"
    if last.role != "tool":
        return tool_call("message_agent", to="coder", text="write add")
    return f"final: {last.content}"


async def _team(roles: list[Agent], policy: Any, **options: Any) -> tuple[TeamResult, Any]:
    result = await run_one(roles, lambda: team("go", lead="lead", **options), FunctionModel(policy),
                           edges=EDGES)  # fmt: skip
    assert isinstance(result.output, TeamResult), result.error
    return result.output, result


async def test_idle_when_the_lead_answers_and_nothing_is_pending() -> None:
    out, result = await _team(_roles(), _delegating)
    assert (out.reason, out.answer, out.ok) == ("idle", "final: add is written", True)
    assert out.roles["lead"].reason == "completed" and out.roles["coder"].turns == 1


async def test_submitted_when_the_lead_submits() -> None:
    def policy(req: ModelRequest) -> object:
        return tool_call("submit", summary="shipped") if req.agent == "lead" else "x"

    out, _ = await _team(_roles(), policy)
    assert (out.reason, out.answer) == ("submitted", "shipped")


async def test_budget_exhausted_when_the_team_budget_refuses_the_lead() -> None:
    out, result = await _team(_roles(), _delegating, limits={"tokens": 10})
    assert out.reason == "budget exhausted" and not out.ok
    assert out.roles["lead"].reason == "budget exhausted before model call"
    assert not of_type(result, "model_called")  # refused before anything was sent


async def test_step_limit_reached_when_the_lead_runs_out_of_steps() -> None:
    out, _ = await _team(_roles(max_steps=1), _delegating)
    assert out.reason == "step limit reached"
    assert out.roles["lead"].steps == 1 and out.roles["coder"].turns == 1


async def test_wall_clock_when_the_team_time_runs_out() -> None:
    never = anyio.Event()

    async def policy(req: ModelRequest) -> object:
        if req.agent == "coder":
            await never.wait()  # the coder never answers; the team's deadline ends it
        return _delegating(req)

    out, result = await _team(_roles(), policy, limits={"seconds": 0.2})
    assert out.reason == "wall clock"
    assert out.roles["coder"].reason == "cancelled"
    ended = {e.agent: e.reason for e in of_type(result, "session_ended")}
    assert ended == {"lead": "cancelled", "coder": "cancelled"}


async def test_a_crashed_role_is_a_typed_failure_and_the_team_goes_on() -> None:
    def policy(req: ModelRequest) -> object:
        if req.agent == "coder":
            raise RuntimeError("the coder's model fell over")
        tools = [m for m in req.messages if m.role == "tool"]
        if len(tools) < 2:  # asks twice: the second message is refused, the coder is out
            return tool_call("message_agent", to="coder", text="write add")
        return tool_call("submit", summary=" | ".join(m.content or "" for m in tools))

    out, result = await _team(_roles(), policy)
    assert out.reason == "submitted" and out.ok
    coder = out.roles["coder"]
    assert coder.failed and coder.state == "error" and "fell over" in coder.detail
    assert out.failed_roles == ["coder"]
    first, second = out.answer.split(" | ")
    assert "coder could not answer" in first and "out of the team" in second
    assert of_type(result, "team_ended")[0].failed == ["coder"]


async def test_the_team_ends_when_the_lead_crashes() -> None:
    def policy(req: ModelRequest) -> object:
        raise RuntimeError("lead model down")

    out, _ = await _team(_roles(), policy)
    assert out.reason == "lead failed" and not out.ok
    assert out.roles["lead"].failed and "lead model down" in out.roles["lead"].detail


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lead": "leed"}, "unknown role 'leed' (did you mean 'lead'?)"),
        ({"lead": "lead", "roles": ["lead", "ghost"]}, "unknown role 'ghost'"),
        ({"lead": "lead", "roles": ["coder"]}, "the lead must be one of the roles"),
        ({"lead": "lead", "roles": "lead"}, "not one string"),
        ({"lead": "lead", "listen": "loud"}, "use 'passive' or 'blocking'"),
        ({"lead": "lead", "limits": "lots"}, "team(limits='lots')"),
    ],
)
async def test_mistakes_fail_the_run_loudly(options: dict[str, Any], message: str) -> None:
    model = FunctionModel(lambda req: "x")
    result = await run_one(_roles(), lambda: team("go", **options), model, edges=EDGES)
    assert isinstance(result.error, ConfigError) and message in str(result.error)
    assert not model.requests
