"""The benchmark cases, one module each; `CASES` maps a case name to its `bench(settings)`."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks._harness import Row, Settings
from benchmarks.cases import (
    batch,
    board,
    caching,
    chain,
    compaction,
    dsl,
    dsl_slow,
    fanout,
    handoff,
    held,
    imports,
    journal,
    latency,
    pipeline,
    prefix,
    report,
    skew,
    team,
)

Case = Callable[[Settings], list[Row]]

CASES: dict[str, Case] = {
    "fanout": fanout.bench,
    "chain": chain.bench,
    "skew": skew.bench,
    "latency": latency.bench,
    "journal": journal.bench,
    "pipeline": pipeline.bench,
    "dsl": dsl.bench,
    "dsl_slow": dsl_slow.bench,
    "import": imports.bench,
    "handoff": handoff.bench,
    "prefix": prefix.bench,
    "batch": batch.bench,
    "board": board.bench,
    "team": team.bench,
    "report": report.bench,
    "compaction": compaction.bench,
    "caching": caching.bench,
    "held": held.bench,
}
