"""Import: the cold start of `swarmflow`, in fresh interpreters.

Each sample starts a new interpreter per program (in rotating order) and takes the difference
of its wall time and that of `python -c "pass"`, so the interpreter's own start-up is not
counted. The programs: `import swarmflow` alone (the target); `import swarmflow` followed by
its first real use, the smallest run (one `agent()` call to a `FunctionModel`, with the JSONL
log and the journal), so that a lazy import is not just cost moved elsewhere; and the
command line's start-up (`swarmflow --help`, `swarmflow check` of the flagship `.swarm` file).
One extra run under `-X importtime` names the heaviest imports.

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
from pathlib import Path

from benchmarks._harness import Row, Settings, Target

CASE = "import"
TARGET_MS = 150.0
IMPORT = "import swarmflow"
NOTHING = "pass"
DEPENDENCIES = "import anyio, structlog; from pydantic import BaseModel"
"""What swarmflow's import pulled in from its dependencies: the floor of a first run."""
FIRST_RUN = """
import tempfile
import swarmflow
from swarmflow.testing import FunctionModel

@swarmflow.flow(team=swarmflow.Team([swarmflow.Agent("w")]))
async def smallest() -> str:
    return (await swarmflow.agent("w", "go")).text

with tempfile.TemporaryDirectory() as root:
    swarmflow.run_sync(smallest, model=FunctionModel(lambda r: "hi"), runs_root=root)
"""
FLAGSHIP_SWARM = Path(__file__).resolve().parents[2] / "examples" / "parallel_coder_arbiter.swarm"
CLI = "from swarmflow.cli import console_main; console_main()"
HELP = ("-c", CLI, "--help")
CHECK = ("-c", CLI, "check", str(FLAGSHIP_SWARM))

Program = tuple[str, ...]
"""The interpreter's arguments."""


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _wall(program: Program, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *program], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def median_seconds(programs: list[Program], runs: int) -> dict[Program, float]:
    """Median wall seconds of each program in a fresh interpreter, rotating their order."""
    samples: dict[Program, list[float]] = {program: [] for program in programs}
    with tempfile.TemporaryDirectory(prefix="swarmflow-pycache-") as cache:
        env = _env(cache)
        for program in programs:  # fills the bytecode cache and warms the disk cache
            _wall(program, env)
        for i in range(max(runs, 1)):
            shift = i % len(programs)
            for program in programs[shift:] + programs[:shift]:
                samples[program].append(_wall(program, env))
    return {program: statistics.median(times) for program, times in samples.items()}


def heaviest_imports(code: str = IMPORT, top: int = 6) -> list[tuple[str, float]]:
    """The modules with the largest self import time (ms), from `-X importtime`."""
    with tempfile.TemporaryDirectory(prefix="swarmflow-pycache-") as cache:
        cmd = [sys.executable, "-X", "importtime", "-c", code]
        subprocess.run(cmd, check=True, capture_output=True, env=_env(cache))
        done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=_env(cache))
    found: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            found.append((parts[2].strip(), int(parts[0]) / 1000))
    return sorted(found, key=lambda kv: kv[1], reverse=True)[:top]


def bench(settings: Settings) -> list[Row]:
    nothing, imports, dependencies, first = (
        ("-c", NOTHING),
        ("-c", IMPORT),
        ("-c", DEPENDENCIES),
        ("-c", FIRST_RUN),
    )
    median = median_seconds(
        [imports, dependencies, first, HELP, CHECK, nothing], settings.import_runs
    )
    bare = median[nothing]

    def ms(program: Program) -> float:
        # A difference smaller than the machine's noise can come out below zero: it reads 0.
        return max(0.0, (median[program] - bare) * 1000)

    deps = ms(dependencies)
    on_deps = "baseline: anyio+structlog+pydantic alone"
    return [
        Row(
            CASE,
            "cold import swarmflow (minus bare start-up)",
            "ms",
            ms(imports),
            target=Target(TARGET_MS),
            note=f"bare python {bare * 1000:.0f} ms",
        ),
        Row(CASE, "import swarmflow + the smallest run", "ms", ms(first), deps, note=on_deps),
        Row(CASE, "swarmflow --help", "ms", ms(HELP), deps, note=on_deps),
        Row(CASE, "swarmflow check (flagship .swarm)", "ms", ms(CHECK), deps, note=on_deps),
        Row(CASE, "heaviest modules, first run (self ms)", "", None, note=_named(FIRST_RUN)),
    ]


def _named(code: str) -> str:
    return ", ".join(f"{name} {ms:.1f}" for name, ms in heaviest_imports(code))
