"""Import: the cold import time of `swarmflow`, in fresh interpreters.

Each sample starts a new `python -c "import swarmflow"` and a new `python -c "pass"` (in
alternating order) and takes the difference of their wall times, so the interpreter's own
start-up is not counted. One extra run under `-X importtime` names the heaviest imports.

Bytecode is cached, as in an installed package: the children run without
`PYTHONDONTWRITEBYTECODE` and with `PYTHONPYCACHEPREFIX` in a temporary folder (so nothing is
written into the source tree), after a warm-up run that fills it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks._harness import Row, Settings, Target

CASE = "import"
TARGET_MS = 150.0
IMPORT = "import swarmflow"
NOTHING = "pass"
DEPENDENCIES = "import anyio, structlog; from pydantic import BaseModel"
"""What swarmflow's import pulls in from its dependencies: the floor for the baseline column."""


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _wall(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def import_seconds(runs: int) -> dict[str, float]:
    """Median seconds of each program (swarmflow, its dependencies, nothing), rotating order."""
    programs = [IMPORT, DEPENDENCIES, NOTHING]
    samples: dict[str, list[float]] = {code: [] for code in programs}
    with tempfile.TemporaryDirectory(prefix="swarmflow-pycache-") as cache:
        env = _env(cache)
        for code in programs:  # fills the bytecode cache and warms the disk cache
            _wall(code, env)
        for i in range(max(runs, 1)):
            for code in programs[i % 3 :] + programs[: i % 3]:
                samples[code].append(_wall(code, env))
    return {code: statistics.median(times) for code, times in samples.items()}


def heaviest_imports(top: int = 6) -> list[tuple[str, float]]:
    """The modules with the largest self import time (ms), from `-X importtime`."""
    with tempfile.TemporaryDirectory(prefix="swarmflow-pycache-") as cache:
        cmd = [sys.executable, "-X", "importtime", "-c", IMPORT]
        subprocess.run(cmd, check=True, capture_output=True, env=_env(cache))
        done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=_env(cache))
    found: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            found.append((parts[2].strip(), int(parts[0]) / 1000))
    return sorted(found, key=lambda kv: kv[1], reverse=True)[:top]


def bench(settings: Settings) -> list[Row]:
    median = import_seconds(settings.import_runs)
    bare = median[NOTHING]
    heavy = ", ".join(f"{name} {ms:.1f}" for name, ms in heaviest_imports())
    return [
        Row(
            CASE,
            "cold import swarmflow (minus bare start-up)",
            "ms",
            (median[IMPORT] - bare) * 1000,
            (median[DEPENDENCIES] - bare) * 1000,
            Target(TARGET_MS),
            note=f"baseline: anyio+structlog+pydantic alone; bare python {bare * 1000:.0f} ms",
        ),
        Row(CASE, "heaviest modules (self ms)", "", None, note=heavy),
    ]
