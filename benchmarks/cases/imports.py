"""Import: the cold import time of `swarmflow`, in fresh interpreters.

Each sample starts a new `python -c "import swarmflow"` and a new `python -c "pass"` (in
alternating order) and takes the difference of their wall times, so the interpreter's own
start-up is not counted. One extra run under `-X importtime` names the heaviest imports.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from benchmarks._harness import Row, Settings, Target

CASE = "import"
TARGET_MS = 150.0
IMPORT = "import swarmflow"
NOTHING = "pass"


def _wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - started


def import_seconds(runs: int) -> tuple[float, float]:
    """Median seconds of `import swarmflow` and of an empty interpreter, over `runs` pairs."""
    _wall(IMPORT)  # warm the disk cache and the bytecode cache
    ours: list[float] = []
    bare: list[float] = []
    for i in range(max(runs, 1)):
        pair = [(IMPORT, ours), (NOTHING, bare)]
        if i % 2:
            pair.reverse()
        for code, sink in pair:
            sink.append(_wall(code))
    return statistics.median(ours), statistics.median(bare)


def heaviest_imports(top: int = 6) -> list[tuple[str, float]]:
    """The modules with the largest self import time (ms), from `-X importtime`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORT], check=True, capture_output=True,
        text=True,
    )
    found: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            found.append((parts[2].strip(), int(parts[0]) / 1000))
    return sorted(found, key=lambda kv: kv[1], reverse=True)[:top]


def bench(settings: Settings) -> list[Row]:
    ours, bare = import_seconds(settings.import_runs)
    heavy = ", ".join(f"{name} {ms:.1f}" for name, ms in heaviest_imports())
    return [
        Row(CASE, "cold import swarmflow (minus bare start-up)", "ms", (ours - bare) * 1000,
            target=Target(TARGET_MS), note=f"bare python {bare * 1000:.0f} ms"),
        Row(CASE, "heaviest modules (self ms)", "", None, note=heavy),
    ]
