"""A 200-step session that crosses its context budget several times: every request fits,
summaries are charged and keep what they must, and between compactions each request extends
the previous one (the prompt prefix stays reusable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.cases.compaction import (
    BLOCKS,
    CONTEXT_TOKENS,
    DECISION,
    OLD_BEHAVIOUR,
    STEPS,
    Measured,
    largest_request,
    passes,
    session,
    summarised,
    summariser_policy,
)
from swarmflow.core.errors import ModelUnavailable
from swarmflow.core.messages import ModelRequest
from swarmflow.core.tokens import estimate_prompt
from swarmflow.record.events import ContextCompacted, ContextLevelRefused, ModelCalled
from swarmflow.testing import FunctionModel


async def test_200_steps_fit_the_budget_and_the_summary_keeps_the_decision(
    tmp_path: Path,
) -> None:
    summariser = FunctionModel(summariser_policy, name="summariser")
    m = await session(summarised(summariser), tmp_path)
    assert m.output == "done" and len(m.requests) == STEPS
    for request in m.requests:
        assert estimate_prompt(request.messages, request.tools) <= CONTEXT_TOKENS
    assert passes(m.events) >= 5  # it crossed its budget several times
    # The summaries are model calls like any other: recorded, charged to the run's budget.
    summaries = [e for e in m.events if isinstance(e, ModelCalled) and e.purpose == "summary"]
    fired = [e for e in m.events if isinstance(e, ContextCompacted) and e.level == "summarise"]
    assert summaries and len(summaries) == len(summariser.requests) == len(fired)
    assert all(e.tokens_spent > 0 for e in fired)
    every_call = [e for e in m.events if isinstance(e, ModelCalled)]
    assert m.ledger_tokens == sum(e.tokens_in + e.tokens_out for e in every_call)
    # What the summary must keep is still in the context at step 200.
    last = " ".join(msg.content or "" for msg in m.requests[-1].messages)
    assert DECISION in last and "src/cache.py" in last
    assert m.reuse >= 90.0


def _extends(before: ModelRequest, after: ModelRequest) -> bool:
    return list(after.messages[: len(before.messages)]) == list(before.messages)


async def test_between_compactions_each_request_extends_the_last_and_reuse_beats_the_old_way(
    tmp_path: Path,
) -> None:
    blocks = await session(BLOCKS, tmp_path / "blocks")
    old = await session(OLD_BEHAVIOUR, tmp_path / "old")
    calls = [e for e in blocks.events if isinstance(e, ModelCalled | ContextCompacted)]
    compacted_before = []
    pending = False
    for e in calls:
        if isinstance(e, ContextCompacted):
            pending = True
        else:
            compacted_before.append(pending)
            pending = False
    pairs = zip(blocks.requests, blocks.requests[1:], compacted_before[1:], strict=False)
    extended = [_extends(a, b) for a, b, compacted in pairs if not compacted]
    assert extended and all(extended)  # byte for byte, between two compactions
    assert largest_request(blocks) <= CONTEXT_TOKENS and largest_request(old) <= CONTEXT_TOKENS
    assert blocks.reuse >= 90.0
    assert _not_reused(blocks) < _not_reused(old)
    assert blocks.prompt_tokens < old.prompt_tokens
    assert passes(blocks.events) < passes(old.events)


def _not_reused(m: Measured) -> float:
    return m.prompt_tokens * (100.0 - m.reuse) / 100.0


@pytest.mark.parametrize("budget", [12_000, 16_000, 24_000])
async def test_the_head_stays_and_reuse_reaches_90_percent_whatever_the_budget(
    tmp_path: Path, budget: int
) -> None:
    """The block rule (docs/context.md): the task and the oldest turns stay the first bytes
    of every request, the step-3 decision and the working file are still there at step 200,
    and at least 90% of the prompt tokens repeat the previous request's prefix."""
    m = await session(BLOCKS, tmp_path, context_tokens=budget)
    assert m.output == "done" and len(m.requests) == STEPS
    assert all(estimate_prompt(r.messages, r.tools) <= budget for r in m.requests)
    first, last = m.requests[0].messages, m.requests[-1].messages
    assert list(last[: len(first)]) == list(first)
    text = " ".join(msg.content or "" for msg in last)
    assert DECISION in text and "src/cache.py" in text
    assert m.reuse >= 90.0, f"{m.reuse:.1f}% at {budget}"


@pytest.mark.parametrize("trouble", ["budget", "failure"])
async def test_a_summary_the_budget_cannot_pay_for_is_refused_and_the_request_still_fits(
    tmp_path: Path, trouble: str
) -> None:
    def broken(request: ModelRequest) -> str:
        raise ModelUnavailable("the summariser is down")

    if trouble == "budget":
        policy = summarised(FunctionModel(summariser_policy, name="summariser"), allowance=50)
    else:
        policy = summarised(FunctionModel(broken, name="summariser"))
    m = await session(policy, tmp_path, context_tokens=12_000, steps=120)
    assert m.output == "done"
    for request in m.requests:
        assert estimate_prompt(request.messages, request.tools) <= 12_000
    refused = [e for e in m.events if isinstance(e, ContextLevelRefused)]
    assert refused and {e.level for e in refused} == {"summarise"}
    reason = "the next model call" if trouble == "budget" else "the summariser is down"
    assert reason in refused[0].reason
    levels = {e.level for e in m.events if isinstance(e, ContextCompacted)}
    assert "summarise" not in levels and "drop_oldest" in levels
    assert not [e for e in m.events if isinstance(e, ModelCalled) and e.purpose == "summary"]


async def test_a_summariser_that_ignores_its_limit_cannot_outgrow_the_budget(
    tmp_path: Path,
) -> None:
    def rambling(request: ModelRequest) -> str:
        return "Decisions: none.\n" + "and another thing " * 5_000  # far past its 800 tokens

    policy = summarised(FunctionModel(rambling, name="summariser"))
    m = await session(policy, tmp_path, context_tokens=12_000, steps=120)
    assert m.output == "done"
    for request in m.requests:
        assert estimate_prompt(request.messages, request.tools) <= 12_000
    summaries = [
        msg.content or ""
        for msg in m.requests[-1].messages
        if (msg.content or "").startswith("[summary of the earlier")
    ]
    assert summaries and summaries[0].endswith("[summary cut to its budget]")
