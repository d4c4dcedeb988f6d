"""Context compaction on a 200-step session that crosses its context budget many times.

One scripted agent reads source files, test logs and JSON reports in a repository, loops on
one call now and then, and makes a decision at step 3 that must survive to the end. It runs
under four context policies: none needed (a budget it never reaches), the old behaviour (the
history reduced to just under the budget on every call once over it), block compaction with
the deterministic levels, and block compaction with a model-written summary, the last two
at 12k, 16k and 24k. The rows give
the prompt tokens sent and the share of them that repeat the previous request's prefix (what
a provider's prompt cache can serve).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchmarks._harness import Row, Settings, Target
from swarmflow import Agent, Team, agent, flow, run
from swarmflow.context import ContextPolicy
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.core.tokens import estimate_prompt
from swarmflow.record.events import ContextCompacted, ModelCalled
from swarmflow.report import digest
from swarmflow.testing import FunctionModel, Step

STEPS = 200
CONTEXT_TOKENS = 24_000
DECISION = "Decision: keep the LRU cache in src/cache.py and drop the global dict."
REUSE_TARGET = 90.0
"""Block compaction: at least 90% of prompt tokens are a reused prefix."""

OLD_BEHAVIOUR = ContextPolicy(processors=("elide_observations", "drop_oldest"), high=1.0, low=0.99)
"""What a session did before block compaction: once over budget, reduce to just under it."""
BLOCKS = ContextPolicy()
"""Block compaction, the deterministic levels (the default policy)."""
NO_LIMIT = 10_000_000
BUDGETS = (12_000, 16_000, 24_000)
"""The context budgets the block rule is measured at (docs/context.md)."""


def summarised(summariser: Any = None, allowance: int | None = None) -> ContextPolicy:
    """Block compaction with the model-written summary."""
    levels = ("collapse_loops", "offload", "reduce_structure", "elide_observations",
              "summarise", "drop_oldest", "compact_session")  # fmt: skip
    return ContextPolicy(processors=levels, summariser=summariser, summary_allowance=allowance)


def make_repository(root: Path) -> Path:
    """Sources, test logs and JSON reports for the agent to read."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    (root / "src" / "cache.py").write_text("CACHE = {}\n\ndef get(key):\n    return CACHE[key]\n")
    (root / "src" / "loop.txt").write_text("still waiting for the build lock\n")
    for i in range(20):
        body = "".join(f"def f_{i}_{n}(x):\n    return x * {n}\n\n" for n in range(14))
        (root / "src" / f"mod_{i}.py").write_text(body)
    for i in range(5):
        lines = [f"tests/test_m{i}.py::test_{n} PASSED" for n in range(40)]
        lines += ["=" * 20 + " FAILURES " + "=" * 20, f"____ test_bad_{i} ____",
                  f"E       assert {i} == {i + 1}", f"tests/test_m{i}.py:9: AssertionError",
                  "=" * 10 + f" 1 failed, 40 passed in 3.{i}s " + "=" * 10]  # fmt: skip
        (root / "logs" / f"test_{i}.log").write_text("\n".join(lines) + "\n")
        rows = [{"id": n, "file": f"src/mod_{n}.py", "ok": n % 3 != 0} for n in range(25)]
        (root / "data" / f"report_{i}.json").write_text(json.dumps(rows, indent=1))
    full = [f"tests/test_all.py::test_{n} PASSED" for n in range(300)]
    full += ["FAILED tests/test_all.py::test_cache - KeyError: 'missing'",
             "========== 1 failed, 300 passed in 12.5s =========="]  # fmt: skip
    (root / "logs" / "full.log").write_text("\n".join(full) + "\n")
    return root


def _thought(k: int) -> str:
    """What a model says beside its call: a few sentences of reasoning (about 400 chars)."""
    return (
        f"Step {k}. The previous result narrows it down: the cache is read in several modules "
        f"and the failing test touches module {k % 20}. Before changing anything I check how "
        f"it is used there and whether the report for run {k % 5} agrees with the log, so "
        "that the change stays small and the tests that pass now still pass afterwards."
    )


def _call(n: int, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(f"call{n}", name, json.dumps(arguments))


def worker_policy(steps: int = STEPS) -> Callable[[ModelRequest], Step | str]:
    """The agent's script: a decision at step 3, a short dead loop every 25 steps."""
    count = 0

    def policy(request: ModelRequest) -> Step | str:
        nonlocal count
        count += 1
        k = count
        if k >= steps:
            return "done"
        if k == 3:
            return Step(DECISION, (_call(k, "read_file", path="src/cache.py"),))
        if k % 25 in (10, 11):
            return Step(None, (_call(k, "read_file", path="src/loop.txt"),))
        if k % 20 == 5:
            return Step(_thought(k), (_call(k, "read_file", path="logs/full.log"),))
        kind = k % 3
        if kind == 0:
            call = _call(k, "read_file", path=f"src/mod_{k % 20}.py")
        elif kind == 1:
            call = _call(k, "read_file", path=f"logs/test_{k % 5}.log")
        else:
            call = _call(k, "read_file", path=f"data/report_{k % 5}.json")
        return Step(_thought(k), (call,))

    return policy


_PATH = re.compile(r"\bsrc/[\w/]+\.py\b")


def summariser_policy(request: ModelRequest) -> str:
    """A summariser that keeps what the prompt asks for: decisions and file paths."""
    text = request.messages[-1].content or ""
    decisions = dict.fromkeys(
        line.strip("- ").strip() for line in text.splitlines() if "Decision:" in line
    )
    files = dict.fromkeys(_PATH.findall(text))
    return (
        "Decisions:\n"
        + "\n".join(f"- {d}" for d in decisions)
        + "\nFiles:\n"
        + "\n".join(f"- {f}" for f in list(files)[:8])
    )


@dataclass
class Measured:
    """One 200-step session under one policy."""

    requests: list[ModelRequest]
    events: list[Any]
    prompt_tokens: int
    """Prompt tokens the session's own steps sent (as estimated when sent)."""
    summary_tokens: int
    reuse: float
    compactions: int
    """Context levels that fired."""
    passes: int
    """Compactions: the runs of levels between two of the session's model calls."""
    ledger_tokens: int
    output: str


async def session(
    policy: ContextPolicy | None,
    root: Path,
    *,
    context_tokens: int = CONTEXT_TOKENS,
    steps: int = STEPS,
    budget: dict[str, float] | None = None,
) -> Measured:
    """Run the session under `policy` in a repository made under `root`."""
    repo = make_repository(root / "repo")
    worker = Agent("worker", tools=["read_file", "list_files"], workspace="local",
                   max_steps=steps + 5, context=policy)  # fmt: skip
    model = FunctionModel(worker_policy(steps), name="worker-model")

    @flow(team=Team([worker]))
    async def long_session() -> str:
        return (await agent("worker", "Tidy the cache module; read what you need first.")).text

    result = await run(long_session, model=model, repo=repo, context_tokens=context_tokens,
                       runs_root=root / "runs", budget=budget, raise_on_failure=False)  # fmt: skip
    calls = [e for e in result.events if isinstance(e, ModelCalled)]
    d = digest(result.events)
    spend = d.by_agent()["worker"]
    return Measured(
        requests=list(model.requests),
        events=list(result.events),
        prompt_tokens=sum(e.prompt_tokens for e in calls if e.purpose == "turn"),
        summary_tokens=sum(e.tokens_in + e.tokens_out for e in calls if e.purpose == "summary"),
        reuse=100.0 * (spend.prefix_share or 0.0),
        compactions=len([e for e in result.events if isinstance(e, ContextCompacted)]),
        passes=passes(result.events),
        ledger_tokens=next(e.tokens for e in result.events if e.type == "run_finished"),
        output=str(result.output),
    )


def passes(events: list[Any]) -> int:
    """Compactions: runs of `context_compacted` between two of the session's model calls."""
    count, inside = 0, False
    for e in events:
        if isinstance(e, ContextCompacted) and not inside:
            count, inside = count + 1, True
        elif isinstance(e, ModelCalled) and e.purpose == "turn":
            inside = False
    return count


def largest_request(m: Measured) -> int:
    return max(estimate_prompt(r.messages, r.tools) for r in m.requests)


async def _all(steps: int) -> dict[str, Measured]:
    out = {}
    with tempfile.TemporaryDirectory(prefix="swarmflow-bench-compaction-") as where:
        base = Path(where)
        summariser = FunctionModel(summariser_policy, name="summariser")
        shapes = {
            "no compaction (no limit)": (None, NO_LIMIT),
            "reduced to just under the budget every call": (OLD_BEHAVIOUR, CONTEXT_TOKENS),
        }
        for budget in BUDGETS:
            k = f"{budget // 1000}k"
            shapes[f"blocks, deterministic, {k}"] = (BLOCKS, budget)
            shapes[f"blocks, with summaries, {k}"] = (summarised(summariser), budget)
        for n, (name, (policy, limit)) in enumerate(shapes.items()):
            out[name] = await session(policy, base / str(n), context_tokens=limit, steps=steps)
    return out


def bench(settings: Settings) -> list[Row]:
    steps = STEPS if settings.name != "tiny" else 30
    measured = anyio.run(_all, steps)
    rows = []
    for name, m in measured.items():
        note = (
            f"{m.passes} compactions, {m.compactions} levels fired; largest request "
            f"{largest_request(m):,} tokens; {m.prompt_tokens * (100 - m.reuse) / 100:,.0f} "
            "not a reused prefix"
        )
        if m.summary_tokens:
            note += f"; summaries {m.summary_tokens:,} tokens"
        rows.append(Row(f"{steps}-step session, {name}", "prompt tokens sent", "tokens",
                        float(m.prompt_tokens), note=note))  # fmt: skip
        target = Target(100 - REUSE_TARGET) if name.startswith("blocks") else None
        rows.append(Row(f"{steps}-step session, {name}", "prompt tokens not a reused prefix",
                        "%", 100.0 - m.reuse, target=target,
                        note=f"reused {m.reuse:.1f}%"))  # fmt: skip
    # The flagship runs git worktrees: left out of the smoke test's tiny size.
    return rows + (flagship_rows() if settings.name != "tiny" else [])


def _old_cards(folder: Path) -> Path:
    """The flagship's cards as they were laid out before: which coder this is, first."""
    from swarmflow.flows.parallel_coder_arbiter import CARDS, card_dir
    from swarmflow.sessions.layout import split_card

    source = card_dir()
    for name in CARDS:
        text = (source / name).read_text()
        shared, branch = split_card(text)
        (folder / name).write_text(f"{branch}\n{shared}\n" if branch else text)
    return folder


async def flagship_cross_share(cards: Path | None = None) -> tuple[float, list[ModelRequest]]:
    """The coders' share of their first prompt that another coder's first prompt began with,
    in the flagship flow run offline with its demo policy; and the coders' first requests."""
    from swarmflow.channels import ScriptedHuman
    from swarmflow.flows import create_target, demo_model, solve
    from swarmflow.flows.target_repo import DEMO_TASK

    with tempfile.TemporaryDirectory(prefix="swarmflow-bench-flagship-") as where:
        target = await create_target(Path(where) / "target")
        model = demo_model()
        result = await solve(target, DEMO_TASK, model=model, cards=cards,
                             human=ScriptedHuman(lambda q, p: "y"),
                             runs_root=Path(where) / "runs")  # fmt: skip
    result.raise_for_status()
    share = digest(result.events).by_agent()["coder"].cross_share or 0.0
    firsts = [r for r in model.requests if r.agent == "coder" and len(r.messages) <= 3]
    return 100.0 * share, firsts


async def _flagship_both() -> tuple[float, float]:
    now, _ = await flagship_cross_share()
    with tempfile.TemporaryDirectory(prefix="swarmflow-bench-cards-") as where:
        before, _ = await flagship_cross_share(_old_cards(Path(where)))
    return now, before


def flagship_rows() -> list[Row]:
    now, before = anyio.run(_flagship_both)
    return [
        Row(
            "flagship coders, shared prefix across sessions",
            "of a later coder's first prompt",
            "%",
            now,
            note=f"card first, then tools and task; {before:.1f}% with the coder's "
            "number at the card's head",
        )  # fmt: skip
    ]
