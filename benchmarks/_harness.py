"""Timing, memory and reporting shared by every benchmark case.

Timing: a probe is an async callable that does one run of the work and returns the seconds it
measured itself (at least `"wall"`, sometimes an inner figure such as `"inner"`), so that set-up
and clean-up stay outside the timed region. `alternate` runs the swarmflow probe and the
baseline probe in one event loop, alternating their order each round (ABBA), after a warm-up,
and keeps the median of every figure.

Memory is measured in a separate run under `tracemalloc`, never while timing: tracing slows
every allocation several times over and would distort the times.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

Timings = dict[str, float]
Probe = Callable[[], Coroutine[Any, Any, Timings]]


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """How hard to push: sizes, repetitions and the latency scale of the simulated models."""

    name: str = "full"
    runs: int = 9
    warmup: int = 2
    fanout_sizes: tuple[int, ...] = (100, 1_000, 10_000)
    memory_sizes: tuple[int, ...] = (1_000, 10_000)
    chain_calls: int = 1_000
    latency_branches: int = 64
    latency_wide_branches: int = 1_000
    coders: int = 8
    dsl_lines: int = 2_000
    import_runs: int = 7
    time_scale: float = 1.0
    """Multiplies every simulated model latency (the smoke test shrinks them)."""
    board_agents: int = 50
    board_messages: int = 5_000
    report_events: tuple[int, int] = (10_000, 100_000)
    """The two log sizes `swarmflow report` reads (its peak memory must not grow with them)."""

    def with_runs(self, runs: int | None) -> Settings:
        return self if runs is None else replace(self, runs=max(1, runs))


FULL = Settings()
QUICK = Settings(
    name="quick",
    runs=5,
    warmup=1,
    fanout_sizes=(100, 1_000, 10_000),
    memory_sizes=(1_000,),
    import_runs=5,
)
TINY = Settings(
    name="tiny",
    runs=1,
    warmup=0,
    fanout_sizes=(10,),
    memory_sizes=(10,),
    chain_calls=12,
    latency_branches=4,
    latency_wide_branches=8,
    coders=3,
    dsl_lines=60,
    import_runs=1,
    time_scale=0.02,
    board_agents=10,
    board_messages=200,
    report_events=(200, 2_000),
)


# -- rows -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A ceiling on the swarmflow figure (`on="value"`) or on swarmflow/baseline (`"ratio"`)."""

    limit: float
    on: Literal["value", "ratio"] = "value"

    def describe(self, unit: str) -> str:
        return f"<= {self.limit:g}x" if self.on == "ratio" else f"<= {_fmt(self.limit)} {unit}"


@dataclass
class Row:
    """One line of the results table."""

    case: str
    metric: str
    unit: str
    swarmflow: float | None
    baseline: float | None = None
    target: Target | None = None
    note: str = ""
    ratio: float | None = field(default=None)

    def __post_init__(self) -> None:
        if self.ratio is None and self.swarmflow is not None and self.baseline:
            self.ratio = self.swarmflow / self.baseline

    @property
    def passed(self) -> bool | None:
        if self.target is None or self.swarmflow is None:
            return None
        value = self.ratio if self.target.on == "ratio" else self.swarmflow
        return None if value is None else value <= self.target.limit

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["target"] = None if self.target is None else self.target.describe(self.unit)
        out["passed"] = self.passed
        return out


def skipped(case: str, reason: str) -> Row:
    """A row saying a case could not run, and why."""
    return Row(case, "skipped", "", None, note=reason)


# -- timing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paired:
    """Medians of each figure, for swarmflow and for the baseline."""

    swarmflow: Timings
    baseline: Timings
    samples: int


async def timed(work: Awaitable[Any]) -> tuple[float, Any]:
    """Seconds spent awaiting `work`, and its result."""
    started = time.perf_counter()
    result = await work
    return time.perf_counter() - started, result


def alternate(swarmflow: Probe, baseline: Probe, settings: Settings) -> Paired:
    """Warm up, then run both probes `settings.runs` times each, alternating; medians."""
    paired: Paired = run_async(_alternate(swarmflow, baseline, settings))
    return paired


async def _alternate(swarmflow: Probe, baseline: Probe, settings: Settings) -> Paired:
    ours: list[Timings] = []
    theirs: list[Timings] = []
    for round_ in range(settings.warmup + settings.runs):
        order = [(swarmflow, ours), (baseline, theirs)]
        if round_ % 2:
            order.reverse()
        for probe, sink in order:
            gc.collect()
            figures = await probe()
            if round_ >= settings.warmup:
                sink.append(figures)
    return Paired(_medians(ours), _medians(theirs), len(ours))


MIN_BASELINE_ITEMS = 20_000
"""A baseline sample repeats its work until it covers this many items (branches or calls):
raw asyncio finishes 1,000 items in well under a millisecond, where one context switch of a
shared machine would swamp the figure."""


def repeats_for(items: int) -> int:
    """How many times to repeat a baseline of `items` items in one sample."""
    return max(1, MIN_BASELINE_ITEMS // max(items, 1))


def mean_of(work: Callable[[], Awaitable[Any]], repeats: int) -> Probe:
    """A probe that awaits `work()` `repeats` times and reports the mean seconds as "wall"."""

    async def probe() -> Timings:
        started = time.perf_counter()
        for _ in range(repeats):
            await work()
        return {"wall": (time.perf_counter() - started) / repeats}

    return probe


def _medians(samples: Sequence[Timings]) -> Timings:
    keys = samples[0].keys() if samples else ()
    return {k: statistics.median(s[k] for s in samples) for k in keys}


def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run `coro` on a fresh asyncio loop (the backend swarmflow's anyio runs on here)."""
    with asyncio.Runner() as runner:
        return runner.run(coro)


# -- memory ---------------------------------------------------------------------------------


def peak_bytes(probe: Probe) -> int:
    """Peak traced allocation while `probe` runs, above what was live before it started."""
    gc.collect()
    tracemalloc.start()
    try:
        live_before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run_async(probe())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return max(0, peak - live_before)


# -- output ---------------------------------------------------------------------------------

COLUMNS = ("case", "metric", "swarmflow", "baseline", "ratio", "target", "result")


def table(rows: Iterable[Row]) -> str:
    """The rows as an aligned text table."""
    cells = [COLUMNS, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def markdown(rows: Iterable[Row]) -> str:
    """The rows as a Markdown table."""
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out.extend("| " + " | ".join(c.replace("|", "/") for c in _cells(r)) + " |" for r in rows)
    return "\n".join(out)


def _cells(row: Row) -> tuple[str, ...]:
    unit = f" {row.unit}" if row.unit else ""
    ours = "-" if row.swarmflow is None else f"{_fmt(row.swarmflow)}{unit}"
    theirs = "-" if row.baseline is None else f"{_fmt(row.baseline)}{unit}"
    ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
    target = "-" if row.target is None else row.target.describe(row.unit)
    verdict = {True: "pass", False: "MISS", None: ""}[row.passed]
    if row.note:
        verdict = f"{verdict}; {row.note}" if verdict else row.note
    return row.case, row.metric, ours, theirs, ratio, target, verdict


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if value == int(value):
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, printed beside every table."""
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def environment(settings: Settings) -> dict[str, Any]:
    """What the numbers were measured on."""
    import swarmflow

    return {
        "settings": asdict(settings),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "swarmflow": swarmflow.__version__,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_json(path: Path, rows: Sequence[Row], meta: dict[str, Any]) -> None:
    """Write the results (meta plus rows) as JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta, "rows": [r.as_dict() for r in rows]}
    path.write_text(json.dumps(payload, indent=2) + "\n")
