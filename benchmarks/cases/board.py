"""Board: many agents, many messages over threads, on the raw board inside a real run.

`agents` agents (50) in threads of five; each thread's members post in turn, each message
@mentioning the next member, `messages` (5,000) in all. Every agent listens passively: it waits
on `wait_pending` and drains with `take_mentions`, as an idle passive role does. Measured:
the delivery latency of each mention, from `send_message` returning to the recipient's
`take_mentions` (median and 95th percentile), and the wall time per message. Checked on every
run: no mention lost, none delivered twice, each thread's messages and each agent's mentions
in `seq` order.

Baseline: the same traffic over one anyio memory object stream per agent (no board, no
topology check, no journal, no events): the floor of handing a message to a waiting task.
Each message costs at least one model call (0.1-30 s) on each side; the target is a median
delivery under 5 ms, 5% of the fastest model call. The latency includes waiting for the other
threads' posters in the same turn of the event loop, as it would in a run.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from benchmarks._harness import Row, Settings, Target, run_async
from benchmarks.cases._common import function_model, runs_folder
from swarmflow import Agent, Team, flow, run
from swarmflow.runtime.context import current_run
from swarmflow.teams.board import Board, board_for

CASE = "board"
GROUP = 5
TARGET_MS = 5.0


def team_of(agents: int) -> Team:
    names = [f"a{i}" for i in range(agents)]
    edges = [(a, b) for a in names for b in names if a != b]
    return Team([Agent(n) for n in names], edges=edges)


@dataclass
class Traffic:
    """What the listeners saw."""

    sent_at: dict[int, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    taken: dict[str, list[tuple[str, int]]] = field(default_factory=lambda: defaultdict(list))


def _threads(names: list[str]) -> list[list[str]]:
    return [names[i : i + GROUP] for i in range(0, len(names), GROUP)]


async def _post(board: Board, thread: int, members: list[str], count: int, seen: Traffic) -> None:
    for i in range(count):
        sender, target = members[i % len(members)], members[(i + 1) % len(members)]
        board.send_message(sender, f"t{thread}", f"message {i} of t{thread}", [target])
        seen.sent_at[board.seq] = time.perf_counter()
        await anyio.lowlevel.checkpoint()  # let the listeners run, as a model call would


async def _listen(board: Board, me: str, expected: int, seen: Traffic) -> None:
    while len(seen.taken[me]) < expected:
        await board.wait_pending(me)
        now = time.perf_counter()
        for mention in board.take_mentions(me):
            seen.latencies.append(now - seen.sent_at[mention.seq])
            seen.taken[me].append((mention.thread, mention.seq))


def check(board: Board, seen: Traffic, messages: int) -> None:
    """No mention lost or repeated; every thread and every inbox in `seq` order."""
    delivered = sorted(seq for inbox in seen.taken.values() for _, seq in inbox)
    assert delivered == list(range(1, messages + 1)), "a mention was lost or repeated"
    for thread in board.snapshot().threads:
        seqs = [m.seq for m in thread.messages]
        assert seqs == sorted(seqs), f"thread {thread.name} out of order"
    for inbox in seen.taken.values():
        per_thread: dict[str, list[int]] = defaultdict(list)
        for thread_name, seq in inbox:
            per_thread[thread_name].append(seq)
        assert all(s == sorted(s) for s in per_thread.values()), "an inbox out of order"


async def exchange(agents: int, messages: int) -> tuple[Traffic, float]:
    """Inside a running flow: make the threads, run the traffic, check it."""
    board = board_for(current_run())
    names = list(current_run().deps.team.names)
    groups = _threads(names)
    for k, members in enumerate(groups):
        board.create_thread(members[0], f"t{k}", members[1:])
    per_thread = messages // len(groups)
    expected = {n: 0 for n in names}
    for members in groups:
        for i in range(per_thread):
            expected[members[(i + 1) % len(members)]] += 1
    seen = Traffic()
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(_listen, board, name, expected[name], seen)
        for k, members in enumerate(groups):
            group.start_soon(_post, board, k, members, per_thread, seen)
    wall = time.perf_counter() - started
    check(board, seen, per_thread * len(groups))
    return seen, wall


async def _measure(agents: int, messages: int) -> tuple[Traffic, float]:
    @flow(team=team_of(agents))
    async def board_traffic() -> tuple[Traffic, float]:
        return await exchange(agents, messages)

    with runs_folder() as root:
        result = await run(
            board_traffic, model=function_model(lambda r: "x"), runs_root=root, events="jsonl"
        )
    output: tuple[Traffic, float] = result.output
    return output


async def _baseline(agents: int, messages: int) -> tuple[list[float], float]:
    names = [f"a{i}" for i in range(agents)]
    streams = {n: anyio.create_memory_object_stream[tuple[int, float]](messages) for n in names}
    groups = _threads(names)
    per_thread = messages // len(groups)
    latencies: list[float] = []

    async def post(members: list[str]) -> None:
        for i in range(per_thread):
            await streams[members[(i + 1) % len(members)]][0].send((i, time.perf_counter()))
            await anyio.lowlevel.checkpoint()

    async def listen(name: str) -> None:
        async with streams[name][1] as inbox:
            async for _, sent in inbox:
                latencies.append(time.perf_counter() - sent)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(listen, name)
        async with anyio.create_task_group() as posters:
            for members in groups:
                posters.start_soon(post, members)
        for send, _ in streams.values():
            send.close()
    return latencies, time.perf_counter() - started


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def bench(settings: Settings) -> list[Row]:
    agents, messages = settings.board_agents, settings.board_messages
    seen, wall = run_async(_measure(agents, messages))
    raw, raw_wall = run_async(_baseline(agents, messages))
    size = f"{CASE} {agents} agents, {messages:,} messages"
    ms = 1000.0
    return [
        Row(
            size,
            "delivery latency, median",
            "ms",
            statistics.median(seen.latencies) * ms,
            statistics.median(raw) * ms,
            target=Target(TARGET_MS),
            note="send_message -> take_mentions; baseline: memory streams",
        ),  # fmt: skip
        Row(size, "delivery latency, p95", "ms", _p95(seen.latencies) * ms, _p95(raw) * ms),
        Row(
            size,
            "wall time per message",
            "us",
            wall / messages * 1e6,
            raw_wall / messages * 1e6,
            note="no message lost; thread and inbox order checked",
        ),  # fmt: skip
    ]


__all__ = ["bench", "check", "exchange", "team_of"]
