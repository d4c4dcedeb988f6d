"""What a prefix-caching server would cache (`swarmflow.caching_server`): one agent's session
of tool calls, and 8 parallel sessions of one agent started by `parallel`, whose cards mark
their branch part. The rows give the share of prompt tokens the server reported as cached
(`prompt_tokens_details.cached_tokens`, as vLLM's automatic prefix caching would), and for
the 2nd to 8th sessions' first calls, the share of the part they share with the first
session's first request (card, tools, task) that the cache served.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio

from benchmarks._harness import Row, Settings, Target
from swarmflow import Agent, Team, agent, flow, parallel, run
from swarmflow.caching_server import CachingServer, prompt_tokens
from swarmflow.models import OpenAIModel
from swarmflow.models.guard import allow_model_calls
from swarmflow.record.events import ModelCalled

SESSION_STEPS = 30
LONG_STEPS = 200
PARALLEL = 8
SHARED_TARGET = 95.0
"""The 2nd..Nth sessions' first calls: at least this share of their shared part cached."""
CARD = (
    "You are a coder on a Python repository. Read before you change anything, keep each "
    "change small, run the tests after every edit and say what you changed and why. "
    "Never touch files outside the task's scope; ask when the task is unclear.\n"
    * 6
    + "<!-- branch -->\nYou are coder {{ i }} of {{ n }}: try approach number {{ i }}."
)


def policy(steps: int) -> Any:
    """The server's model: `list_files` until `steps` calls were made, then an answer."""

    def answer(body: dict[str, Any]) -> str | dict[str, Any]:
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if done >= steps - 1:
            return "done"
        arguments = json.dumps({"path": ".", "note": f"look {done}"})
        call = {"id": f"c{done}", "type": "function",
                "function": {"name": "list_files", "arguments": arguments}}  # fmt: skip
        return {"content": f"Step {done}: listing the tree again.", "tool_calls": [call]}

    return answer


@dataclass
class Cached:
    """What the server cached for one run."""

    prompt_tokens: int
    cached_tokens: int
    first_shared: list[int]
    """For each later session: the tokens its first request shares with the first one's."""
    first_cached: list[int]
    """For each later session: the cached tokens the server reported on its first request."""

    @property
    def share(self) -> float:
        return 100.0 * self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def first_share(self) -> float:
        shared = sum(self.first_shared)
        return 100.0 * sum(self.first_cached) / shared if shared else 0.0


def _team() -> Team:
    return Team([Agent("coder", card=CARD, tools=["list_files", "read_file"], max_steps=99)])


async def measure(sessions: int, steps: int) -> Cached:
    """`sessions` sessions of one agent, in parallel, against one caching server."""

    @flow(team=_team())
    async def fan_out() -> list[Any]:
        async def one(i: int) -> Any:
            return (await agent("coder", "List the tree.", i=i, n=sessions)).text

        return list(await parallel(one, n=sessions))

    with CachingServer(policy(steps)) as server, allow_model_calls():
        model = OpenAIModel("cached", base_url=server.url, api_key="sk-local-bench-key")
        async with model:
            result = await run(fan_out, model=model)
        exchanges = list(server.exchanges)
    result.raise_for_status()
    # The report's figures: what the server reported, as each `model_called` recorded it.
    calls = [e for e in result.events if isinstance(e, ModelCalled)]
    firsts = [(b, s) for b, s in exchanges if all(m["role"] != "assistant" for m in b["messages"])]
    head = prompt_tokens(firsts[0][0])
    return Cached(
        prompt_tokens=sum(e.tokens_in for e in calls),
        cached_tokens=sum(e.tokens_cached for e in calls),
        first_shared=[_common(head, prompt_tokens(b)) for b, _ in firsts[1:]],
        first_cached=[s.cached_tokens for _, s in firsts[1:]],
    )


def _common(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def scripted(steps: int) -> Any:
    """The compaction benchmark's worker script as the server's model."""
    from benchmarks.cases.compaction import worker_policy

    script = worker_policy(steps)

    def answer(body: dict[str, Any]) -> str | dict[str, Any]:
        step = script(None)  # type: ignore[arg-type]  # the script counts calls, reads nothing
        if isinstance(step, str):
            return step
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": c.name, "arguments": c.arguments}}
                 for c in step.tool_calls]  # fmt: skip
        return {"content": step.text, "tool_calls": calls}

    return answer


async def long_session(context_tokens: int, steps: int) -> float:
    """The compaction benchmark's session (deterministic levels) on the caching server: the
    share of its prompt tokens the server served from its cache."""
    import tempfile
    from pathlib import Path

    from benchmarks.cases.compaction import BLOCKS, make_repository

    worker = Agent("worker", tools=["read_file", "list_files"], workspace="local",
                   max_steps=steps + 5, context=BLOCKS)  # fmt: skip

    @flow(team=Team([worker]))
    async def tidy() -> str:
        return (await agent("worker", "Tidy the cache module; read what you need first.")).text

    with tempfile.TemporaryDirectory(prefix="swarmflow-bench-cached-") as where:
        repo = make_repository(Path(where) / "repo")
        with CachingServer(scripted(steps)) as server, allow_model_calls():
            model = OpenAIModel("cached", base_url=server.url, api_key="sk-local-bench-key")
            async with model:
                result = await run(tidy, model=model, repo=repo, context_tokens=context_tokens,
                                   runs_root=Path(where) / "runs")  # fmt: skip
    calls = [e for e in result.events if isinstance(e, ModelCalled)]
    return 100.0 * sum(e.tokens_cached for e in calls) / sum(e.tokens_in for e in calls)


def bench(settings: Settings) -> list[Row]:
    steps = SESSION_STEPS if settings.name != "tiny" else 5
    one = anyio.run(measure, 1, steps)
    many = anyio.run(measure, PARALLEL, steps)
    long_steps = LONG_STEPS if settings.name != "tiny" else 20
    compacted = [
        Row(f"caching server, {long_steps}-step session, {budget // 1000}k budget",
            "prompt tokens cached", "%", anyio.run(long_session, budget, long_steps),
            note="the compaction benchmark's session, deterministic levels")
        for budget in (12_000, 24_000)
    ]  # fmt: skip
    return compacted + [
        Row("caching server, one session", "prompt tokens cached", "%", one.share,
            note=f"{steps} steps; {one.cached_tokens:,} of {one.prompt_tokens:,} tokens"),
        Row(f"caching server, {PARALLEL} parallel sessions", "prompt tokens cached", "%",
            many.share, note=f"{many.cached_tokens:,} of {many.prompt_tokens:,} tokens"),
        Row(f"caching server, {PARALLEL} parallel sessions",
            "2nd..Nth first calls: shared part not cached", "%", 100.0 - many.first_share,
            target=Target(100.0 - SHARED_TARGET),
            note=f"cached {many.first_share:.1f}% of {sum(many.first_shared):,} shared tokens"),
    ]  # fmt: skip
