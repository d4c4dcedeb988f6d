"""Instructions per fan-out branch, counted by valgrind's callgrind, for swarmflow and the peers
(`python -m benchmarks.peers --instructions`).

On a shared machine the timed table moves by tens of percent between two quiet runs (one
peer's N = 1,000 branch read 500, 396 and 250 µs on three runs of one day), and the target's
verdict moves with it. An instruction count does not depend on the machine's load: each
engine's fan-out runs once with LOW and once with HIGH branches under callgrind, after the
same imports and warm-up, and (HIGH run - LOW run) / (HIGH - LOW) is what one more branch
costs. The count is user-space instructions only: the kernel's share (the write barriers'
`write(2)`s) and cache misses are not in it, so it complements the timed table.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LOW, HIGH = 100, 1_100
"""The two fan-out sizes compared by default; the figure is per branch near N = 1,000
(`--branches 10000` compares 100 and 10,100: per branch near N = 10,000)."""
BASELINE = "baseline"
_COLLECTED = re.compile(r"Collected : (\d+)")


class CounterMissing(RuntimeError):
    """valgrind is not installed."""


def count(python: Path, shapes: Path, engine: str, size: int, flags: Sequence[str]) -> int:
    """Instructions of one process that runs `engine`'s fan-out of `size` branches once."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CounterMissing("--instructions needs valgrind (Debian: apt-get install valgrind)")
    cmd = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", str(python),
           str(shapes), *flags, "--count", engine, "--size", str(size)]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict layouts in both runs
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
        raise RuntimeError(f"counting {engine} at N={size} failed ({done.returncode}):\n{tail}")
    return int(found.group(1))


def per_branch(
    python: Path,
    shapes: Path,
    engines: Sequence[str],
    flags: Sequence[str],
    branches: int = HIGH - LOW,
) -> dict[str, float]:
    """Instructions per fan-out branch of each engine and of the raw-asyncio baseline, near
    N = `branches` (runs of LOW and LOW + `branches` branches).

    The runs go in parallel, one per core: a count does not change with the load.
    """
    high = LOW + branches
    names = [*engines, BASELINE]
    jobs = [(name, size) for name in names for size in (LOW, high)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = list(pool.map(lambda job: count(python, shapes, *job, flags), jobs))
    by_job = dict(zip(jobs, counts, strict=True))
    return {name: (by_job[name, high] - by_job[name, LOW]) / branches for name in names}


def report(
    per: dict[str, float], peers: Sequence[str], target: float, branches: int = HIGH - LOW
) -> str:
    """Thousands of instructions per branch, x the baseline, and swarmflow / each peer."""
    base = per[BASELINE]
    lines = [f"fan-out near N={branches:,}: instructions per branch (callgrind, user space)"]
    for name in ("swarmflow", *peers):
        lines.append(f"  {name:<16} {per[name] / 1000:8.1f} k  ({per[name] / base:.1f}x raw)")
    lines.append(f"  {BASELINE:<16} {base / 1000:8.1f} k")
    for peer in peers:
        ratio = per["swarmflow"] / per[peer]
        verdict = "pass" if ratio <= target else "MISS"
        lines.append(f"  swarmflow/{peer}: {ratio:.2f}x {verdict} (target at most {target:g}x)")
    return "\n".join(lines)
