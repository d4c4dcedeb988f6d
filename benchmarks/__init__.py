"""swarmflow's benchmark suite: `python -m benchmarks` (`make bench`).

Each case runs swarmflow and a raw-asyncio baseline of the same work shape in one process,
alternating between them, and reports medians and ratios. The suite is not part of `make test`;
`tests/test_benchmarks_smoke.py` only proves that every case still runs at a tiny size.
`python -m benchmarks.peers` (`make bench-peers`) runs the same shapes in LangGraph and
pydantic-graph, side by side.
"""
