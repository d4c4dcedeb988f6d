"""What the example `.swarm` flows in this folder import (`use Verdict from swarm_examples`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from swarmflow import (
    Agent,
    Flow,
    Team,
    agent,
    agent_session,
    budget,
    compact,
    human,
    parallel,
    pipeline,
)


class Verdict(BaseModel):
    """The arbiter's pick among the candidates."""

    choice: int = Field(description="Index of the chosen candidate, from 0")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the arbiter is, 0 to 1")
    reason: str = ""


def has_text(value: Any) -> bool:
    """A `compact(keep: ...)` predicate: keep values whose text is not blank."""
    return bool(str(getattr(value, "text", value)).strip())


def first_line(value: Any) -> str:
    """A pipeline stage written in Python: the first line of an agent's answer."""
    text = str(getattr(value, "text", value)).strip()
    return text.splitlines()[0] if text else ""


class Review(BaseModel):
    """A reviewer's structured answer."""

    approved: bool
    score: float = Field(ge=0.0, le=1.0)
    comments: str = ""


class Triage(BaseModel):
    """A screener's routing decision: who takes a report, and why."""

    route: Literal["fix", "docs", "close"]
    reason: str = ""


CODER_CARD = "You are a coder. Make one small, tested change."

team = Team(
    [
        Agent(
            "coder",
            card=CODER_CARD,
            tools=["read_file", "edit", "run_shell", "submit"],
            allowance=400_000,
            max_steps=30,
        ),
        Agent("reviewer", tools=["read_file", "run_shell"]),
        Agent("arbiter"),
    ],
    edges=[
        ("coder", "reviewer"),
        ("reviewer", "arbiter"),
        ("arbiter", "human"),
        ("coder", "arbiter"),
    ],
)


async def _parallel_coder_arbiter(task: str) -> Verdict:
    """The Python twin of examples/parallel_coder_arbiter.swarm, line for line."""
    left = await budget()
    n = min(max((left.tokens or 0) / 400_000, 1), 4)
    candidates = compact(await parallel(lambda i: agent("coder", task), n=int(n)))
    reviews = compact([r async for r in pipeline(candidates, lambda c: agent("reviewer", c))])
    async with agent_session("arbiter") as arbiter:
        for review in reviews:
            await arbiter.tell(review)
        verdict: Verdict = await arbiter.ask(f"Pick the best candidate for {task}.", output=Verdict)
    if verdict.confidence < 0.7:
        verdict = await human("Approve the arbiter's pick?", verdict)
    return verdict


parallel_coder_arbiter: Flow[[str], Verdict] = Flow(
    _parallel_coder_arbiter,
    team=team,
    name="parallel_coder_arbiter",
    budget={"tokens": 2_000_000, "calls": 400, "cost": 5.0, "seconds": 1800.0},
)
