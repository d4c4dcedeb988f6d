"""The fan-out, chain and skew shapes in a peer engine; prints one JSON object on stdout.

Run by `python -m benchmarks.peers` with the peers' interpreter (`.venv-peers`), as
`python shapes.py --engine langgraph|pydantic-graph`. Standard library plus the chosen
engine only: swarmflow is not installed there. Like the main suite, each shape alternates
the engine with a raw-asyncio baseline in the same process and keeps medians.
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


async def alternate(
    engine: Work, baseline: Work, runs: int, warmup: int, items: int = 0
) -> dict[str, float]:
    """Median seconds of the engine and of the baseline, alternating (ABBA) after a warm-up.

    A baseline sample repeats until it covers MIN_BASELINE_ITEMS items (mean per repeat).
    """
    repeats = max(1, MIN_BASELINE_ITEMS // items) if items else 1
    ours: list[float] = []
    theirs: list[float] = []
    for round_ in range(warmup + runs):
        pair = [(engine, ours, 1), (baseline, theirs, repeats)]
        if round_ % 2:
            pair.reverse()
        for work, sink, times in pair:
            seconds = await _once(work, times)
            if round_ >= warmup:
                sink.append(seconds)
    return {"engine": statistics.median(ours), "baseline": statistics.median(theirs)}


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


def _bound(work: Callable[[int], Awaitable[None]], n: int) -> Work:
    return lambda: work(n)


ENGINES: dict[str, dict[str, Any]] = {
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
    engine: str, sizes: list[int], steps: int, runs: int, warmup: int
) -> dict[str, Any]:
    """Every shape in `engine`, each against its raw-asyncio baseline."""
    shapes = ENGINES[engine]
    out: dict[str, Any] = {
        "engine": engine,
        "version": metadata.version(shapes["package"]),
        "python": sys.version.split()[0],
        "fanout": {},
    }
    for n in sizes:
        out["fanout"][str(n)] = await alternate(
            shapes["fanout"](n), _bound(gather_baseline, n), runs, warmup, items=n
        )
    out["chain"] = await alternate(
        shapes["chain"](steps), _bound(chain_baseline, steps), runs, warmup, items=steps
    )
    out["skew"] = await alternate(shapes["skew"](), skew_baseline, runs, warmup)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=sorted(ENGINES), required=True)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    result = asyncio.run(measure(args.engine, sizes, args.steps, args.runs, args.warmup))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
