"""Team runs on the board: listening modes side by side, and a load of 50 roles.

- listening: the same scripted team (an assembler and three workers on one thread) run
  `passive` and `blocking`. Reported: mentions delivered, model steps spent listening (a step
  whose only call is `wait_for_mention`), and model calls in all. Counts, not times.
- load: 50 roles in one `team(...)`, passive. Every role opens its own thread to the next role
  and posts 100 messages there, each @mentioning that role, one per model step (5,000 in all);
  the model answers after a simulated 10 ms. Checked: every mention delivered, in `seq` order
  per thread. Reported: the median and 95th percentile delivery latency, from the post to the
  receiver's next step boundary (the `mention_delivered` event), and the wall time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio

from benchmarks._harness import Row, Settings
from benchmarks.cases._common import USAGE, function_model, runs_folder
from swarmflow import Agent, RunResult, Team, flow, run, team
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import Step, tool_call

BOARD = ("create_thread", "send_message", "wait_for_mention")
CALL_LATENCY = 0.01

# -- passive versus blocking ----------------------------------------------------------------

WORKERS = ("w1", "w2", "w3")
SMALL = Team(
    [Agent("assembler", tools=[*BOARD, "submit"]), *(Agent(w, tools=BOARD) for w in WORKERS)],
    edges=[(a, b) for w in WORKERS for a, b in (("assembler", w), (w, "assembler"))],
)


@flow(team=SMALL)
async def assemble(listen: str) -> str:
    result = await team("assemble", lead="assembler", listen=listen)  # type: ignore[arg-type]
    return result.reason


def _assembler(req: ModelRequest, listen: str) -> object:
    done = [m for m in req.messages if m.role == "tool"]
    if not done:
        return tool_call("create_thread", name="plan", participants=list(WORKERS))
    if len(done) == 1:
        return tool_call(
            "send_message", thread="plan", content="report", mentions=list(WORKERS)
        )
    heard = "\n".join(m.content or "" for m in req.messages)
    if all(f"done by {w}" in heard for w in WORKERS):
        return tool_call("submit", summary="assembled")
    return tool_call("wait_for_mention", timeout=60) if listen == "blocking" else "waiting"


def _worker(req: ModelRequest) -> object:
    text = req.messages[-1].content or ""
    if "unread mention" in text:
        return tool_call("wait_for_mention", timeout=60)
    if "report" in text and req.messages[-1].role in ("user", "tool"):
        return tool_call(
            "send_message", thread="plan", content=f"done by {req.agent}", mentions=["assembler"]
        )
    return "reported"


def _small_policy(listen: str) -> Callable[[ModelRequest], object]:
    def policy(req: ModelRequest) -> object:
        return _assembler(req, listen) if req.agent == "assembler" else _worker(req)

    return policy


async def _listening_rows() -> list[Row]:
    rows = []
    with runs_folder() as root:
        for listen in ("passive", "blocking"):
            result = await run(assemble, model=function_model(_small_policy(listen)),
                               runs_root=root, listen=listen)  # fmt: skip
            calls = [e for e in result.events if e.type == "model_called"]
            listening = sum(getattr(e, "tool_calls", []) == ["wait_for_mention"] for e in calls)
            delivered = sum(e.type == "mention_delivered" for e in result.events)
            case = f"team listening {listen}"
            rows += [
                Row(case, "mentions delivered", "n", float(delivered)),
                Row(case, "model steps spent listening", "n", float(listening)),
                Row(case, "model calls in all", "n", float(len(calls))),
            ]
    return rows


# -- the load -------------------------------------------------------------------------------


def _load_team(n: int) -> Team:
    names = [f"r{i}" for i in range(n)]
    edges = [(names[i], names[(i + 1) % n]) for i in range(n)]
    return Team([Agent(name, tools=BOARD) for name in names], edges=edges)


def _load_policy(n: int, per_role: int, latency: float) -> Callable[[ModelRequest], Any]:
    def policy(req: ModelRequest) -> Any:
        me = int(req.agent[1:])
        target = f"r{(me + 1) % n}"
        sent = sum(
            1 for m in req.messages for c in m.tool_calls if c.name == "send_message"
        )
        if not any(c.name == "create_thread" for m in req.messages for c in m.tool_calls):
            call = tool_call("create_thread", name=f"t{me}", participants=[target])
        elif sent < per_role:
            call = tool_call("send_message", thread=f"t{me}", content=f"n={sent}",
                             mentions=[target])  # fmt: skip
        else:
            return Step(text="done", latency=latency, usage=USAGE)
        return Step(tool_calls=[call], latency=latency, usage=USAGE)

    return policy


def _load_flow(n: int) -> Any:
    @flow(team=_load_team(n), name="team_load")
    async def load() -> str:
        # r0 leads; every other role starts when its predecessor's first post wakes it, so
        # the ring fills within the first steps and then every role posts at once.
        result = await team("go", lead="r0")
        return result.reason

    return load


def _check_and_measure(result: RunResult, n: int, per_role: int) -> list[float]:
    posted = {(e.thread, e.message_seq): e.t for e in result.events
              if e.type == "board_message_posted"}  # fmt: skip
    delivered = [e for e in result.events if e.type == "mention_delivered"]
    if len(posted) != n * per_role or len(delivered) != n * per_role:
        raise AssertionError(f"lost: {len(posted)} posted, {len(delivered)} delivered")
    last: dict[str, int] = {}
    for e in delivered:  # the log's order is the delivery order
        if e.message_seq <= last.get(e.thread, 0):
            raise AssertionError(f"thread {e.thread} delivered out of order at {e.message_seq}")
        last[e.thread] = e.message_seq
    return [e.t - posted[(e.thread, e.message_seq)] for e in delivered]


async def _load_rows(settings: Settings) -> list[Row]:
    n, per_role = (50, 100) if settings.name != "tiny" else (5, 10)
    latency = CALL_LATENCY * settings.time_scale
    with runs_folder() as root:
        started = time.perf_counter()
        result = await run(_load_flow(n), model=function_model(_load_policy(n, per_role, latency)),
                           runs_root=root)  # fmt: skip
        wall = time.perf_counter() - started
    waits = sorted(_check_and_measure(result, n, per_role))
    p95 = waits[int(0.95 * (len(waits) - 1))]
    case = f"team load {n} roles x {per_role} msgs, {latency * 1000:g} ms calls"
    note = "every mention delivered, per-thread order kept"
    return [
        Row(case, "median delivery latency, post to next step", "ms",
            1000 * statistics.median(waits), note=note),  # fmt: skip
        Row(case, "p95 delivery latency", "ms", 1000 * p95),
        Row(case, "wall time", "s", wall),
    ]


def bench(settings: Settings) -> list[Row]:
    async def both() -> list[Row]:
        return [*await _listening_rows(), *await _load_rows(settings)]

    return anyio.run(both)
