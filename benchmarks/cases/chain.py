"""Sequential chains: many model calls in one session, and many steps across operators.

`session`: one `agent_session` and `send()` called `calls` times, each turn one model call.
This is the public way to make many calls in one conversation, and it adds nothing but the
session's own work (a tool-calling loop would add each tool's cost to every call); the
history grows as it would in a real conversation. Baseline: `calls` sequential awaits of the
fake model. Overhead per call = (swarmflow - baseline) / calls.

`long session`: the same, with messages and answers long enough to be fingerprinted (the
handoff check reads them), reporting the time per turn in the last fifth of the session
against the first fifth: a turn must not cost more as the conversation grows.

`tool loop`: one `agent()` turn whose model calls a trivial registered tool `calls - 1` times
and then answers: the inner loop's per-call cost, tool execution included (informational).

`carded agent()`: `calls` one-call `agent()` sessions of an agent with an inline role card
(one card variable) that asks for a structured answer (`output=`): the shape of most real
calls, and the one that shows a cost per role card or per output type.

`equipped agent()`: `calls` one-call `agent()` sessions of an agent with the flagship coder's
seven tools (their schemas go out with every request; the model calls none) while an observing
rail runs at every session hook: the per-session and per-call cost of tools and rails, which
the other rows' bare agent does not show.

`operators`: `calls` steps in sequence, cycling `agent()` / `compact()` / `budget()`.
Baseline: the same loop in plain asyncio (an awaited fake call, a list filter, a dict).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from itertools import count
from pathlib import Path

from pydantic import BaseModel

from benchmarks._harness import (
    Paired,
    Probe,
    Row,
    Settings,
    Target,
    Timings,
    alternate,
    mean_of,
    repeats_for,
)
from benchmarks.cases._common import (
    DONE,
    TEAM,
    WORKER,
    fake_call,
    function_model,
    reply,
    run_flow,
    runs_folder,
    zero_latency_model,
)
from swarmflow import Agent, Flow, Team, agent, agent_session, budget, compact, flow
from swarmflow.core.messages import ModelRequest
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.flows import TEAM as FLAGSHIP_TEAM
from swarmflow.rails import Hook, Rail, rail
from swarmflow.testing import FunctionModel, Step, tool_call
from swarmflow.tools import ArgsModel, ToolRegistry

CASE = "chain"
OVERHEAD_TARGET_US = 100.0
"""Engine overhead per model call: 1% of a 10 ms call."""
GROWTH_LIMIT = 1.2
"""A turn late in a long session may cost at most this much more than an early one (the
spread of this shared machine; a quadratic cost doubles it and more)."""
LOOPER = "looper"


@flow(team=TEAM)
async def session_chain(calls: int) -> float:
    """`calls` turns on one session; returns the seconds the turns took."""
    async with agent_session(WORKER) as session:
        started = time.perf_counter()
        for i in range(calls):
            await session.send(f"step {i}")
        return time.perf_counter() - started


@flow(team=TEAM)
async def long_session(calls: int) -> dict[str, float]:
    """`calls` turns with fingerprinted texts; seconds of the first and of the last fifth."""
    fifth = max(1, calls // 5)
    marks: list[float] = []
    async with agent_session(WORKER) as session:
        for i in range(calls):
            if i % fifth == 0:
                marks.append(time.perf_counter())
            await session.send(f"Step {i}: carry on with part {i} of the plan, as agreed")
        marks.append(time.perf_counter())
    return {"first": (marks[1] - marks[0]) / fifth, "last": (marks[-1] - marks[-2]) / fifth}


def numbered_model() -> FunctionModel:
    """Answers each call with a text of its own, long enough to be fingerprinted."""
    made = count()
    return function_model(
        lambda _request: reply(f"Done with part {next(made)}: the change is in module_x.py")
    )


@flow(team=TEAM)
async def agent_chain(steps: int) -> float:
    """`steps` one-call `agent()` sessions in sequence; returns the seconds they took."""
    started = time.perf_counter()
    for i in range(steps):
        await agent(WORKER, f"step {i}")
    return time.perf_counter() - started


REVIEWER = "reviewer"
REVIEW_TEAM = Team(
    [Agent(REVIEWER, card="You review {{ project }}'s changes: approve or not, and score them.")]
)


class Review(BaseModel):
    """The carded chain's structured answer."""

    approved: bool
    score: int


REVIEW = reply('{"approved": true, "score": 3}')


@flow(team=REVIEW_TEAM)
async def carded_chain(steps: int) -> float:
    """`steps` structured `agent()` calls of a carded agent; returns the seconds they took."""
    started = time.perf_counter()
    for i in range(steps):
        await agent(REVIEWER, f"change {i}", output=Review, project="calc")
    return time.perf_counter() - started


EQUIPPED = "equipped"
EQUIPPED_TEAM = Team(
    [Agent(EQUIPPED, tools=list(next(a for a in FLAGSHIP_TEAM.agents if a.name == "coder").tools))]
)
OBSERVER: Rail = rail("observer", list(Hook), lambda _ctx: None)
"""A rail at every hook that only looks: what running the rails costs, with no veto."""


@flow(team=EQUIPPED_TEAM)
async def equipped_chain(steps: int) -> float:
    """`steps` one-call `agent()` sessions of an agent with tools; returns their seconds."""
    started = time.perf_counter()
    for i in range(steps):
        await agent(EQUIPPED, f"step {i}")
    return time.perf_counter() - started


@flow(team=TEAM)
async def operator_chain(steps: int) -> float:
    """`steps` operator calls in sequence; returns the seconds they took."""
    last = None
    started = time.perf_counter()
    for i in range(steps):
        kind = i % 3
        if kind == 0:
            last = await agent(WORKER, f"step {i}")
        elif kind == 1:
            compact([last])
        else:
            await budget()
    return time.perf_counter() - started


class NoopArgs(ArgsModel):
    """Arguments of the benchmark's trivial tool."""

    n: int


class Noop:
    """A tool that does nothing but answer."""

    name = "noop"
    description = "Does nothing."
    args: type[BaseModel] = NoopArgs
    needs_workspace = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


LOOP_TEAM = Team([Agent(LOOPER, tools=["noop"])])


@flow(team=LOOP_TEAM)
async def tool_loop() -> float:
    """One turn of many model calls (the model decides how many); returns its seconds."""
    started = time.perf_counter()
    await agent(LOOPER, "loop")
    return time.perf_counter() - started


def looping_model(calls: int) -> FunctionModel:
    """Asks for the noop tool `calls - 1` times (arguments differ, so no loop block), then
    answers."""
    made = count()

    def policy(_request: ModelRequest) -> Step:
        i = next(made)
        if i < calls - 1:
            return Step(tool_calls=(tool_call("noop", n=i),), usage=DONE.usage)
        return DONE

    return function_model(policy)


# -- baselines ------------------------------------------------------------------------------


async def _sequential_calls(calls: int) -> None:
    for i in range(calls):
        await fake_call(f"step {i}")


async def _operator_loop(steps: int) -> None:
    last = None
    for i in range(steps):
        kind = i % 3
        if kind == 0:
            last = await fake_call(f"step {i}")
        elif kind == 1:
            _ = [v for v in [last] if v is not None]
        else:
            _ = {"tokens": None, "cost": None, "calls": None}


def _baseline(work: Callable[[int], Awaitable[None]], calls: int) -> Probe:
    return mean_of(lambda: work(calls), repeats_for(calls))


def _session_probe(calls: int, root: Path) -> Probe:
    async def probe() -> Timings:
        wall, result = await run_flow(session_chain, zero_latency_model(), root, calls=calls)
        return {"wall": wall, "inner": float(result.output)}

    return probe


def _long_session_probe(calls: int, root: Path) -> Probe:
    async def probe() -> Timings:
        wall, result = await run_flow(long_session, numbered_model(), root, calls=calls)
        return {"wall": wall, **result.output}

    return probe


def steps_probe(
    target: Flow[..., float],
    steps: int,
    root: Path,
    model: Callable[[], FunctionModel] = zero_latency_model,
    rails: tuple[Rail, ...] = (),
) -> Probe:
    """Times one run of a chain flow; `inner` is the chain alone, without the run's set-up."""

    async def probe() -> Timings:
        wall, result = await run_flow(target, model(), root, rails=rails, steps=steps)
        return {"wall": wall, "inner": float(result.output)}

    return probe


def agent_steps(steps: int, settings: Settings, root: Path) -> Paired:
    """Medians for `steps` sequential `agent()` calls and for as many awaits of the fake."""
    return alternate(
        steps_probe(agent_chain, steps, root), _baseline(_sequential_calls, steps), settings
    )


def _tool_loop_probe(calls: int, root: Path) -> Probe:
    async def probe() -> Timings:
        tools = ToolRegistry([Noop()])
        wall, result = await run_flow(tool_loop, looping_model(calls), root, tools=tools)
        return {"wall": wall, "inner": float(result.output)}

    return probe


# -- rows -----------------------------------------------------------------------------------


def _per_call_rows(label: str, calls: int, paired: Paired, target: Target | None) -> list[Row]:
    us = 1e6 / calls
    ours, theirs = paired.swarmflow["inner"] * us, paired.baseline["wall"] * us
    return [
        Row(f"{CASE} {label}", "per call", "us", ours, theirs),
        Row(
            f"{CASE} {label}",
            "overhead per call",
            "us",
            ours - theirs,
            target=target,
            note="swarmflow minus baseline",
        ),
    ]


def _growth_rows(calls: int, paired: Paired) -> list[Row]:
    first, last = paired.swarmflow["first"] * 1e6, paired.swarmflow["last"] * 1e6
    label = f"{CASE} long session x{calls:,}"
    return [
        Row(label, "per turn, first fifth", "us", first, paired.baseline["wall"] * 1e6 / calls),
        Row(
            label,
            "per turn, last fifth / first fifth",
            "x",
            last / first,
            target=Target(GROWTH_LIMIT),
            note=f"last fifth {last:.1f} us; texts fingerprinted",
        ),
    ]


def bench(settings: Settings) -> list[Row]:
    calls = settings.chain_calls
    with runs_folder() as root:
        session = alternate(
            _session_probe(calls, root), _baseline(_sequential_calls, calls), settings
        )
        loop = alternate(
            _tool_loop_probe(calls, root), _baseline(_sequential_calls, calls), settings
        )
        long = alternate(
            _long_session_probe(calls, root), _baseline(_sequential_calls, calls), settings
        )
        agents = agent_steps(calls, settings, root)
        carded = alternate(
            steps_probe(carded_chain, calls, root, lambda: function_model(lambda _r: REVIEW)),
            _baseline(_sequential_calls, calls),
            settings,
        )
        equipped = alternate(
            steps_probe(equipped_chain, calls, root, rails=(OBSERVER,)),
            _baseline(_sequential_calls, calls),
            settings,
        )
        ops = alternate(
            steps_probe(operator_chain, calls, root), _baseline(_operator_loop, calls), settings
        )
    rows = _per_call_rows(f"session x{calls:,}", calls, session, Target(OVERHEAD_TARGET_US))
    rows += _growth_rows(calls, long)
    rows += _per_call_rows(f"tool loop x{calls:,}", calls, loop, None)
    us = 1e6 / calls
    shapes = (
        ("agent()", agents, "a fresh one-call session each step"),
        ("carded agent()", carded, "an inline role card and a structured answer each step"),
        ("equipped agent()", equipped, "the coder's seven tools, a rail at every hook"),
    )
    for shape, probe, note in shapes:
        rows.append(
            Row(
                f"{CASE} {shape} x{calls:,}",
                "per step",
                "us",
                probe.swarmflow["inner"] * us,
                probe.baseline["wall"] * us,
                note=note,
            )
        )
    rows.append(
        Row(
            f"{CASE} operators x{calls:,}",
            "per step",
            "us",
            ops.swarmflow["inner"] * us,
            ops.baseline["wall"] * us,
            note="agent/compact/budget in turn",
        )
    )
    return rows
