"""Python twins of the example flows with loops and routing, line for line."""

from __future__ import annotations

from typing import Any

from swarm_examples import Review, Triage

from swarmflow import Flow, agent, agent_session, human, team
from swarmflow.sessions.prompts import render_prompt


async def review_loop(task: str) -> str:
    """examples/review_loop.swarm: `repeat 3 { ... } until review.approved`."""
    draft: Any = await agent("coder", "Write a first version.", task=task)
    review: Review | None = None
    for _ in range(3):
        reviewer = agent_session("reviewer")
        async with reviewer:
            review = await reviewer.ask(
                f"Review this draft:\n{render_prompt(draft)}", output=Review
            )
        if not review.approved:
            draft = await agent(
                "coder", f"Revise your draft. The reviewer says: {review.comments}", task=task
            )
        if review.approved:
            break
    assert review is not None
    if not review.approved:
        draft = await human("The reviewer never approved this. Accept it anyway?", draft)
    return str(draft)


async def route_report(report: str) -> str:
    """examples/route_report.swarm: `match triage.route { ... }`."""
    screener = agent_session("screener")
    async with screener:
        triage = await screener.ask(
            f"Who should take this report: fix, docs or close?\n{report}", output=Triage
        )
    if triage.route == "fix":
        answer: Any = (
            await agent("fixer", f"Fix this: {report}\nNotes: {triage.reason}")
        ).text
    elif triage.route == "docs":
        answer = (await agent("writer", f"Document this: {report}")).text
    else:
        answer = await human("The screener would close this report. Agree?", triage)
    return str(answer)


async def pair(task: str) -> str:
    """The team flow in tests/dsl/test_team.py: `team(task, lead: planner, roles: [...])`."""
    result = await team(task, lead="planner", roles=["planner", "coder"], listen="passive")
    return result.answer


def twin(fn: Any, like: Flow[..., Any]) -> Flow[..., Any]:
    """`fn` as a flow with the team and budget of its `.swarm` twin."""
    return Flow(fn, team=like.team, budget=like.limits, name=like.name)
