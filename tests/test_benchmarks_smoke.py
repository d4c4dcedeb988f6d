"""The benchmark suite still runs: every case once, at a tiny size. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


async def test_the_counted_fan_out_runs_for_swarmflow_and_the_baseline() -> None:
    """`bench-peers --instructions` runs each engine's fan-out once under valgrind."""
    from benchmarks.peers.shapes import fan_out_once

    await fan_out_once("swarmflow", 10)
    await fan_out_once("baseline", 10)


def test_the_instruction_report_compares_swarmflow_with_each_peer() -> None:
    from benchmarks.peers.instructions import report

    per = {"swarmflow": 600_000.0, "langgraph": 1_300_000.0, "pydantic-graph": 1_000_000.0,
           "baseline": 50_000.0}  # fmt: skip
    text = report(per, ["langgraph", "pydantic-graph"], 0.5)
    assert "swarmflow/langgraph: 0.46x pass" in text
    assert "swarmflow/pydantic-graph: 0.60x MISS" in text
    assert "(12.0x raw)" in text
    assert "near N=1,000:" in text
    assert "near N=10,000:" in report(per, ["pydantic-graph"], 0.5, branches=10_000)


def test_counting_without_valgrind_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.peers.instructions import CounterMissing, count

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CounterMissing, match="apt-get install valgrind"):
        count(Path("python"), Path("shapes.py"), "swarmflow", 10, [])
