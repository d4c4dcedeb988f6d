"""Measure the output modes on the real llama.cpp server (SmolLM2-135M).

    .venv/bin/python -m tests.llm.measure [TRIALS]

Prints, per mode, the share of structured answers valid on the first try and the share of
forced requests that came back as a tool call of an offered tool. Needs the `llm` extra.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from examples.swarm_examples import Review
from swarmflow.core.messages import Message, ModelRequest, OutputSpec, ToolSpec
from swarmflow.models import OpenAIModel
from tests.support.llama_server import llama_server

DRAFTS = [
    "def add(a, b): return a - b",
    "def is_even(n): return n % 2 == 0",
    "def greet(name): print('hello ' + name)",
    "def mean(xs): return sum(xs) / len(xs)",
    "def last(xs): return xs[len(xs)]",
]
CITIES = ["Paris", "Tokyo", "Lima", "Oslo", "Cairo"]
WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
READ = ToolSpec(
    "read_file",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def _model(url: str, **kw: Any) -> OpenAIModel:
    return OpenAIModel("smollm2", base_url=url, timeout=180.0, max_retries=1, **kw)


def _review_request(draft: str) -> ModelRequest:
    schema = Review.model_json_schema()
    # The prompt structured answers send in every mode (runtime/structured.py).
    text = f"Review this draft:\n{draft}\n\nAnswer with one JSON object that matches this "
    text += f"JSON schema:\n{json.dumps(schema)}"
    return ModelRequest(
        messages=[Message("user", text)], max_tokens=200, output=OutputSpec("Review", schema)
    )


def _valid(text: str | None) -> bool:
    try:
        Review.model_validate_json(text or "")
    except ValidationError:
        return False
    return True


async def structured_rate(url: str, mode: str, trials: int) -> tuple[float, str | None]:
    hits, used = 0, None
    async with _model(url, capabilities={"structured": mode}) as model:
        for n in range(trials):
            response = await model.complete(_review_request(DRAFTS[n % len(DRAFTS)]))
            hits += _valid(response.text)
            used = response.output_mode
    return hits / trials, used


async def tool_rate(url: str, mode: str, tools: list[ToolSpec], trials: int) -> float:
    hits = 0
    names = {t.name for t in tools}
    async with _model(url, force_tool_choice=True, capabilities={"forced_tools": mode}) as model:
        for n in range(trials):
            city = CITIES[n % len(CITIES)]
            request = ModelRequest(
                messages=[Message("user", f"What is the weather in {city}? Use the tool.")],
                tools=tools,
                max_tokens=64,
            )
            response = await model.complete(request)
            hits += bool(response.tool_calls) and all(c.name in names for c in response.tool_calls)
    return hits / trials


async def measure(url: str, trials: int) -> None:
    for mode in ("prompt", "json_schema"):
        started = time.monotonic()
        rate, used = await structured_rate(url, mode, trials)
        took = time.monotonic() - started
        print(
            f"structured {mode:12} (sent as {used}): {rate:.0%} valid first try, {took:.0f} s",
            flush=True,
        )
    for mode, tools in [
        ("required", [WEATHER]),
        ("named", [WEATHER]),
        ("json_schema", [WEATHER]),
        ("required", [WEATHER, READ]),
        ("json_schema", [WEATHER, READ]),
    ]:
        rate = await tool_rate(url, mode, tools, trials)
        print(
            f"forced tools {mode:12} with {len(tools)} tool(s): {rate:.0%} tool calls", flush=True
        )


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as tmp, llama_server(Path(tmp)) as url:
        anyio.run(measure, url, trials)


if __name__ == "__main__":
    main()
