"""Handoff: the cost of the handoff check on a 100 KB prompt, inside a real run.

A coder answers with `products` outputs of about 5 KB each (the fingerprint index holds them
all); then, inside the same flow, `check_outgoing` is timed on a 100 KB prompt to the reviewer
(the edge exists) in three shapes:

- `fresh`: text of the flow's own, sharing nothing with any product;
- `relay`: the same size, a quarter of it pasted from the coder's outputs (along the edge, so
  every shared run is found, extended and excused);
- `refused`: the same text sent to the arbiter, which has no edge (the check finds the coder's
  run and refuses; the time is until `TopologyError`).

Baseline: a floor for scale, not work the check replaces: one `str.encode` of the same 100 KB.
Times are CPU time. A model call over a 100 KB prompt takes seconds; the target is 1% of one
second.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from benchmarks._harness import Row, Settings, Target, run_async
from benchmarks.cases._common import function_model, runs_folder
from swarmflow import Agent, Team, TopologyError, agent, flow, run
from swarmflow.runtime.context import current_run
from swarmflow.sessions.handoff import check_outgoing

CASE = "handoff"
PROMPT_CHARS = 100_000
PRODUCT_CHARS = 5_000
TARGET_MS = 10.0
TEAM = Team(
    [Agent("coder"), Agent("reviewer"), Agent("arbiter")], edges=[("coder", "reviewer")]
)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))


_WORDS = [_word(random.Random(i)) for i in range(5_000)]


def _text(seed: int, chars: int) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def _prompts(outputs: list[str]) -> dict[str, str]:
    fresh = _text(-1, PROMPT_CHARS)
    pasted = "\n".join(outputs)[: PROMPT_CHARS // 4]
    relay = fresh[: PROMPT_CHARS - len(pasted)] + pasted
    return {"fresh": fresh, "relay": relay}


def _median_ms(check: Any, repeats: int) -> float:
    """Median CPU milliseconds of `check`: the check is pure computation, and CPU time does not
    count the waits of a machine shared with other work."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        check()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


@flow(team=TEAM)
async def measured(products: int, repeats: int) -> dict[str, float]:
    """Fill the index with the coder's products, then time the check in each shape."""
    outputs = [str((await agent("coder", f"part {i}")).text) for i in range(products)]
    run_ctx = current_run()
    prompts = _prompts(outputs)
    figures = {
        name: _median_ms(
            lambda text=text: check_outgoing(run_ctx, "reviewer", text, via="prompt"), repeats
        )
        for name, text in prompts.items()
    }

    def refused() -> None:
        try:
            check_outgoing(run_ctx, "arbiter", prompts["relay"], via="prompt")
        except TopologyError:
            return
        raise AssertionError("the check let the coder's text reach the arbiter")

    figures["refused"] = _median_ms(refused, repeats)
    figures["floor"] = _median_ms(prompts["fresh"].encode, repeats)
    figures["index"] = float(len(run_ctx.state.fingerprints))
    return figures


def _answer(request: Any) -> str:
    return _text(int(request.prompt.split()[-1]), PRODUCT_CHARS)


async def _measure(products: int, repeats: int) -> dict[str, float]:
    with runs_folder() as root:
        result = await run(
            measured,
            model=function_model(_answer),
            runs_root=root,
            products=products,
            repeats=repeats,
        )
    return dict(result.output)


def bench(settings: Settings) -> list[Row]:
    products = max(2, settings.coders * 2)
    figures = run_async(_measure(products, max(3, settings.runs)))
    note = f"{products} products of 5 KB indexed; floor: encode the same 100 KB"
    return [
        Row(
            f"{CASE} 100 KB prompt",
            f"check, {shape}",
            "ms",
            figures[shape],
            figures["floor"],
            target=Target(TARGET_MS) if shape == "fresh" else None,
            note=note if shape == "fresh" else "",
        )
        for shape in ("fresh", "relay", "refused")
    ]
