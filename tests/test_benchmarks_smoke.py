"""The benchmark suite still runs: every case once, at a tiny size. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks._harness import TINY, table, write_json
from benchmarks.cases import CASES
from benchmarks.cases.dsl import generate


def test_every_case_runs_at_a_tiny_size(tmp_path: Path) -> None:
    rows = []
    for name, bench in CASES.items():
        produced = bench(TINY)
        assert produced, f"case {name} produced no rows"
        rows.extend(produced)
    measured = [r for r in rows if r.swarmflow is not None]
    assert all(r.swarmflow >= 0 for r in measured if r.swarmflow is not None)
    assert {r.case.split()[0] for r in measured} >= {
        "fanout",
        "chain",
        "skew",
        "latency-bound",
        "pipeline",
        "import",
    }
    assert "fanout" in table(rows)
    out = tmp_path / "bench.json"
    write_json(out, rows, {"settings": "tiny"})
    assert len(json.loads(out.read_text())["rows"]) == len(rows)
    assert generate(2_000).count("\n") >= 1_900


async def test_the_peers_shapes_run_for_swarmflow_at_a_tiny_size() -> None:
    """`bench-peers` measures swarmflow in the peers' process; its side runs here too."""
    from benchmarks.peers.__main__ import figures, report
    from benchmarks.peers.shapes import measure

    raw = await measure(["swarmflow"], [10], 12, runs=1, warmup=0)
    results = figures(raw, [10], 12)
    assert set(results) == {"fanout 10", "chain", "skew"}
    assert all(set(by_engine) == {"swarmflow"} for by_engine in results.values())
    assert "fan-out N=10, per branch" in report(results, [])
