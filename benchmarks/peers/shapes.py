"""The fan-out, chain and skew shapes in swarmflow and the peer engines, in one process;
prints one JSON object on stdout.

Run by `python -m benchmarks.peers` with the peers' interpreter (`.venv-peers`), as
`python shapes.py --engines swarmflow,langgraph,pydantic-graph --swarmflow ROOT --site SITE`:
swarmflow is imported from the checkout at ROOT, and what the peers' venv lacks of its
dependencies from the project's site-packages SITE (appended last, so every package both
have is the peers' own). Like the main suite, each shape alternates the engines and a
raw-asyncio baseline in the same process and event loop, rotating their order every round,
and keeps medians: the machine's load falls on every engine alike.
"""

import argparse
import asyncio
import gc
import json
import operator
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Annotated, Any, TypedDict

MIN_BASELINE_ITEMS = 20_000
BASELINE = "baseline"
SKEW = {"a1": 0.100, "a2": 0.010, "b1": 0.010, "b2": 0.100}
Work = Callable[[], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class FakeReply:
    text: str
    tokens: int


async def fake_call(prompt: str) -> FakeReply:
    """The zero-latency fake model both sides await."""
    return FakeReply("done", len(prompt) // 3 + 2)


# -- timing ---------------------------------------------------------------------------------


async def _once(work: Work, repeats: int = 1) -> float:
    gc.collect()
    started = time.perf_counter()
    for _ in range(repeats):
        await work()
    return (time.perf_counter() - started) / repeats


async def rotate(
    works: dict[str, Work], runs: int, warmup: int, items: int = 0
) -> dict[str, float]:
    """Median seconds of each work, rotating their order every round after a warm-up.

    The "baseline" work repeats until it covers MIN_BASELINE_ITEMS items (mean per repeat).
    """
    repeats = max(1, MIN_BASELINE_ITEMS // items) if items else 1
    samples: dict[str, list[float]] = {name: [] for name in works}
    names = list(works)
    for round_ in range(warmup + runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            times = repeats if name == BASELINE else 1
            seconds = await _once(works[name], times)
            if round_ >= warmup:
                samples[name].append(seconds)
    return {name: statistics.median(values) for name, values in samples.items()}


async def gather_baseline(n: int) -> None:
    await asyncio.gather(*(fake_call(f"task {i}") for i in range(n)))  # noqa: TID251


async def chain_baseline(steps: int) -> None:
    for i in range(steps):
        await fake_call(f"step {i}")


async def skew_baseline() -> None:
    async def lane(name: str) -> None:
        await asyncio.sleep(SKEW[f"{name}1"])
        await asyncio.sleep(SKEW[f"{name}2"])

    await asyncio.gather(lane("a"), lane("b"))  # noqa: TID251


# -- LangGraph ------------------------------------------------------------------------------


class _FanState(TypedDict, total=False):
    n: int
    i: int
    results: Annotated[list[Any], operator.add]


class _ChainState(TypedDict):
    k: int


class _SkewState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def langgraph_fanout(n: int) -> Work:
    """A dispatcher sends N `Send`s to a worker node; results meet in a list reducer."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    async def work(state: _FanState) -> dict[str, Any]:
        return {"results": [await fake_call(f"task {state['i']}")]}

    def fan(state: _FanState) -> list[Send]:
        return [Send("work", {"i": i}) for i in range(state["n"])]

    g = StateGraph(_FanState)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan, ["work"])
    g.add_edge("work", END)
    graph = g.compile()
    return lambda: graph.ainvoke({"n": n})


def langgraph_chain(steps: int) -> Work:
    """One node that loops on itself `steps` times, one fake call each."""
    from langgraph.graph import END, START, StateGraph

    async def step(state: _ChainState) -> dict[str, int]:
        await fake_call(f"step {state['k']}")
        return {"k": state["k"] + 1}

    g = StateGraph(_ChainState)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["k"] < steps else END, ["step", END])
    graph = g.compile()
    return lambda: graph.ainvoke({"k": 0}, {"recursion_limit": steps + 10})


def langgraph_skew() -> Work:
    """a1 -> a2 and b1 -> b2 in parallel, then a join node."""
    from langgraph.graph import END, START, StateGraph

    def node(name: str) -> Callable[[_SkewState], Awaitable[dict[str, list[str]]]]:
        async def run(_state: _SkewState) -> dict[str, list[str]]:
            await asyncio.sleep(SKEW.get(name, 0.0))
            return {"log": [name]}

        return run

    g = StateGraph(_SkewState)
    for name in ("a1", "a2", "b1", "b2", "join"):
        g.add_node(name, node(name))
    g.add_edge(START, "a1")
    g.add_edge(START, "b1")
    g.add_edge("a1", "a2")
    g.add_edge("b1", "b2")
    g.add_edge(["a2", "b2"], "join")
    g.add_edge("join", END)
    graph = g.compile()
    return lambda: graph.ainvoke({})


# -- pydantic-graph -------------------------------------------------------------------------


@dataclass
class _PgState:
    k: int = 0


def pydantic_graph_fanout(n: int) -> Work:
    """A step yields N items, `.map()` fans them out, a list-append join collects them."""
    from pydantic_graph import GraphBuilder, StepContext, reduce_list_append

    g = GraphBuilder(state_type=_PgState, output_type=list)

    @g.step
    async def items(ctx: StepContext[_PgState, None, None]) -> list[int]:
        return list(range(n))

    @g.step
    async def work(ctx: StepContext[_PgState, None, int]) -> FakeReply:
        return await fake_call(f"task {ctx.inputs}")

    collect = g.join(reduce_list_append, initial_factory=list)
    g.add(
        g.edge_from(g.start_node).to(items),
        g.edge_from(items).map().to(work),
        g.edge_from(work).to(collect),
        g.edge_from(collect).to(g.end_node),
    )
    graph = g.build()
    return lambda: graph.run(state=_PgState())


def pydantic_graph_chain(steps: int) -> Work:
    """One step that a decision routes back to itself `steps` times."""
    from pydantic_graph import GraphBuilder, StepContext

    g = GraphBuilder(state_type=_PgState, output_type=int)

    @g.step
    async def step(ctx: StepContext[_PgState, None, object]) -> int:
        await fake_call(f"step {ctx.state.k}")
        ctx.state.k += 1
        return int(ctx.state.k)

    again = g.match(int, matches=lambda k: k < steps).to(step)
    g.add(
        g.edge_from(g.start_node).to(step),
        g.edge_from(step).to(g.decision().branch(again).branch(g.match(int).to(g.end_node))),
    )
    graph = g.build()
    return lambda: graph.run(state=_PgState())


def pydantic_graph_skew() -> Work:
    """Broadcast to a1 and b1, then a1 -> a2 and b1 -> b2, then a join."""
    from pydantic_graph import GraphBuilder, StepContext, reduce_list_append

    g = GraphBuilder(state_type=_PgState, output_type=list)

    def node(name: str) -> Any:
        async def run(ctx: StepContext[_PgState, None, object]) -> str:
            await asyncio.sleep(SKEW[name])
            return name

        run.__name__ = name
        return g.step(run, node_id=name)

    a1, a2, b1, b2 = (node(name) for name in ("a1", "a2", "b1", "b2"))
    collect = g.join(reduce_list_append, initial_factory=list)
    g.add(
        g.edge_from(g.start_node).to(a1, b1),
        g.edge_from(a1).to(a2),
        g.edge_from(b1).to(b2),
        g.edge_from(a2, b2).to(collect),
        g.edge_from(collect).to(g.end_node),
    )
    graph = g.build()
    return lambda: graph.run(state=_PgState())


# -- swarmflow ------------------------------------------------------------------------------


class _Swarmflow:
    """The same shapes through swarmflow's public API, as `make bench` runs them: a real agent
    session per branch or step and the JSONL event log on (benchmarks/cases)."""

    def __init__(self) -> None:
        import tempfile
        from pathlib import Path

        self.root = Path(tempfile.mkdtemp(prefix="swarmflow-peers-"))

    def fanout(self, n: int) -> Work:
        from benchmarks.cases._common import run_flow, zero_latency_model
        from benchmarks.cases.fanout import fan_out

        return lambda: run_flow(fan_out, zero_latency_model(), self.root, n=n)

    def chain(self, steps: int) -> Work:
        from benchmarks.cases._common import run_flow, zero_latency_model
        from benchmarks.cases.chain import agent_chain

        return lambda: run_flow(agent_chain, zero_latency_model(), self.root, steps=steps)

    def skew(self) -> Work:
        from benchmarks.cases._common import run_flow
        from benchmarks.cases.skew import skew_model, skew_probe

        return lambda: run_flow(skew_probe, skew_model(1.0), self.root)

    def close(self) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def _bound(work: Callable[[int], Awaitable[None]], n: int) -> Work:
    return lambda: work(n)


PEERS: dict[str, dict[str, Any]] = {
    "langgraph": {
        "package": "langgraph",
        "fanout": langgraph_fanout,
        "chain": langgraph_chain,
        "skew": langgraph_skew,
    },
    "pydantic-graph": {
        "package": "pydantic-graph",
        "fanout": pydantic_graph_fanout,
        "chain": pydantic_graph_chain,
        "skew": pydantic_graph_skew,
    },
}


async def measure(
    engines: list[str], sizes: list[int], steps: int, runs: int, warmup: int
) -> dict[str, Any]:
    """Every shape in every engine and the raw baseline, rotating, in this one process."""
    ours = _Swarmflow() if "swarmflow" in engines else None
    shapes = {e: PEERS[e] for e in engines if e != "swarmflow"}
    if ours is not None:
        shapes["swarmflow"] = {"fanout": ours.fanout, "chain": ours.chain, "skew": ours.skew}
    versions = {e: metadata.version(PEERS[e]["package"]) for e in engines if e in PEERS}
    out: dict[str, Any] = {"versions": versions, "python": sys.version.split()[0], "fanout": {}}
    try:
        for n in sizes:
            works = {e: shape["fanout"](n) for e, shape in shapes.items()}
            works[BASELINE] = _bound(gather_baseline, n)
            print(f"[peers] fan-out N={n:,} ...", file=sys.stderr, flush=True)
            out["fanout"][str(n)] = await rotate(works, runs, warmup, items=n)
        works = {e: shape["chain"](steps) for e, shape in shapes.items()}
        works[BASELINE] = _bound(chain_baseline, steps)
        print(f"[peers] chain x{steps:,} ...", file=sys.stderr, flush=True)
        out["chain"] = await rotate(works, runs, warmup, items=steps)
        works = {e: shape["skew"]() for e, shape in shapes.items()}
        works[BASELINE] = skew_baseline
        print("[peers] skew ...", file=sys.stderr, flush=True)
        out["skew"] = await rotate(works, runs, warmup)
    finally:
        if ours is not None:
            ours.close()
    return out


COUNT_WARMUP = 50
"""Branches of the warm-up fan-out in `--count` mode (imports and first-use caches)."""


async def fan_out_once(engine: str, n: int) -> None:
    """`engine`'s fan-out of `n` branches, once after a small warm-up, untimed: what
    `--count` runs under an instruction counter (`python -m benchmarks.peers --instructions`)."""
    ours = _Swarmflow() if engine == "swarmflow" else None
    try:
        for size in (COUNT_WARMUP, n):
            if engine == BASELINE:
                await gather_baseline(size)
            elif ours is not None:
                await ours.fanout(size)()
            else:
                await PEERS[engine]["fanout"](size)()
    finally:
        if ours is not None:
            ours.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engines", default="swarmflow," + ",".join(PEERS))
    parser.add_argument("--swarmflow", default="", help="the swarmflow checkout to import")
    parser.add_argument("--site", default="", help="site-packages for swarmflow's dependencies")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--count", default="", help="run ENGINE's fan-out once (see fan_out_once)")
    parser.add_argument("--size", type=int, default=1000, help="branches for --count")
    args = parser.parse_args()
    if args.swarmflow:
        sys.path.insert(0, args.swarmflow)
    if args.site:
        sys.path.append(args.site)
    if args.count:
        asyncio.run(fan_out_once(args.count, args.size))
        return
    engines = [e for e in args.engines.split(",") if e]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    result = asyncio.run(measure(engines, sizes, args.steps, args.runs, args.warmup))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
