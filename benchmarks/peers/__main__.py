"""`python -m benchmarks.peers`: swarmflow beside LangGraph and pydantic-graph.

    python -m benchmarks.peers                 # creates .venv-peers on first use
    python -m benchmarks.peers --quick         # fewer runs, N = 1,000 only
    python -m benchmarks.peers --venv /tmp/peers --runs 7
    python -m benchmarks.peers --instructions  # per-branch instruction counts (valgrind)

Every engine and the raw-asyncio baseline run in one process (the peers' interpreter, with
swarmflow imported from this checkout), their order rotating every round, so the load of a
shared machine falls on all of them alike and the swarmflow/peer ratios can be read directly.
The fan-out rows carry the target: swarmflow at most half of each peer's cost per branch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks._harness import FULL, QUICK, Settings, load_average
from benchmarks.peers import ENGINES, PEER_MODULES, PEER_PACKAGES, instructions

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = ROOT / ".venv-peers"
SHAPES = Path(__file__).resolve().parent / "shapes.py"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "peers.json"
COUNTS_JSON = ROOT / "benchmarks" / "results" / "peers-instructions.json"
SHAPE_TIMEOUT = 1800
PEER_RATIO_TARGET = 0.5
"""Per fan-out branch, swarmflow may cost at most this share of each peer's cost."""


class PeersUnavailable(SystemExit):
    """The peer engines could not be installed or run; the message says why."""


# -- the peers' virtualenv ------------------------------------------------------------------


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def _has_peers(python: Path) -> bool:
    probe = "import " + ", ".join(PEER_MODULES)
    return (
        python.exists()
        and subprocess.run([str(python), "-c", probe], capture_output=True, check=False).returncode
        == 0
    )


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _call(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PeersUnavailable(
            f"bench-peers: could not {what} (exit {done.returncode}).\n"
            f"$ {' '.join(cmd)}\n{_tail(done.stdout + done.stderr)}\n"
            "bench-peers needs PyPI to install " + " and ".join(PEER_PACKAGES) + "; the main "
            "suite (make bench) does not."
        )


def ensure_peers(venv: Path, install: bool = True) -> Path:
    """The peers' interpreter, creating the venv and installing the packages when needed."""
    python = _python(venv)
    if _has_peers(python):
        return python
    if not install:
        raise PeersUnavailable(
            f"bench-peers: {venv} lacks {', '.join(PEER_PACKAGES)} and --no-install was given"
        )
    print(f"[peers] installing {', '.join(PEER_PACKAGES)} into {venv} ...", file=sys.stderr)
    if not python.exists():
        _call([sys.executable, "-m", "venv", str(venv)], f"create the virtualenv {venv}")
    _call(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PEER_PACKAGES],
        f"install {', '.join(PEER_PACKAGES)} into {venv}",
    )
    if not _has_peers(python):
        raise PeersUnavailable(
            f"bench-peers: installed, yet {venv} cannot import {', '.join(PEER_MODULES)}"
        )
    return python


# -- measuring ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One engine's median for a shape, and its own raw-asyncio baseline."""

    value: float
    baseline: float

    @property
    def times_raw(self) -> float:
        return self.value / self.baseline if self.baseline else float("nan")


Results = dict[str, dict[str, Figure]]
"""shape -> engine -> figure."""


def _imports() -> list[str]:
    """`shapes.py`'s flags that import swarmflow from this checkout and its dependencies from
    the project's site-packages."""
    return ["--swarmflow", str(ROOT), "--site", sysconfig.get_paths()["purelib"]]


def run_shapes(
    python: Path, engines: Sequence[str], sizes: Sequence[int], settings: Settings
) -> dict[str, Any]:
    """Run `shapes.py` for swarmflow and the peers in the peers' interpreter; its JSON."""
    cmd = [
        str(python),
        str(SHAPES),
        "--engines",
        ",".join(["swarmflow", *engines]),
        *_imports(),
        "--sizes",
        ",".join(map(str, sizes)),
        "--steps",
        str(settings.chain_calls),
        "--runs",
        str(settings.runs),
        "--warmup",
        str(settings.warmup),
    ]
    print(f"[peers] swarmflow, {', '.join(engines)}, one process ...", file=sys.stderr)
    try:
        done = subprocess.run(
            cmd, stdout=subprocess.PIPE, text=True, check=False, timeout=SHAPE_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise PeersUnavailable(f"bench-peers: the shapes took over {SHAPE_TIMEOUT} s") from None
    if done.returncode != 0:
        raise PeersUnavailable(f"bench-peers: shapes.py failed (exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def figures(raw: dict[str, Any], sizes: Sequence[int], steps: int) -> Results:
    """The JSON of `shapes.py` as per-branch, per-step and wall-time figures per engine."""
    per = {f"fanout {n}": (raw["fanout"][str(n)], 1e6 / n) for n in sizes}
    per["chain"] = (raw["chain"], 1e6 / steps)
    per["skew"] = (raw["skew"], 1.0)
    results: Results = {}
    for shape, (medians, scale) in per.items():
        base = medians["baseline"] * scale
        results[shape] = {
            engine: Figure(value * scale, base)
            for engine, value in medians.items()
            if engine != "baseline"
        }
    return results


# -- reporting ------------------------------------------------------------------------------

LABELS = {"chain": ("sequential chain, per step", "us"), "skew": ("skew probe, wall", "s")}


def _label(shape: str) -> tuple[str, str]:
    if shape.startswith("fanout "):
        return f"fan-out N={int(shape.split()[1]):,}, per branch", "us"
    return LABELS[shape]


def _cell(fig: Figure | None, unit: str) -> str:
    if fig is None:
        return "-"
    value = f"{fig.value:.3f}" if unit == "s" else f"{fig.value:,.0f}"
    return f"{value} {unit} ({fig.times_raw:.1f}x raw)"


def _verdict(shape: str, ratio: float) -> str:
    if not shape.startswith("fanout "):
        return ""
    return " pass" if ratio <= PEER_RATIO_TARGET else " MISS"


def report(results: Results, engines: Sequence[str]) -> str:
    """A table: each engine's figure (and x the raw baseline), then swarmflow / each peer with
    the verdict against the target on the fan-out rows."""
    head = ["shape", "swarmflow", *engines, *(f"swarmflow/{e}" for e in engines)]
    lines = [head]
    for shape, by_engine in results.items():
        label, unit = _label(shape)
        ours = by_engine["swarmflow"]
        cells = [label, _cell(ours, unit)]
        cells += [_cell(by_engine.get(e), unit) for e in engines]
        for e in engines:
            if e not in by_engine:
                cells.append("-")
                continue
            ratio = ours.value / by_engine[e].value
            cells.append(f"{ratio:.2f}x{_verdict(shape, ratio)}")
        lines.append(cells)
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in lines
    ]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text) + (
        f"\n(ratio < 1: swarmflow is faster; fan-out target: at most {PEER_RATIO_TARGET:g}x each"
        f" peer)\nload average {load_average()}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the peers' virtualenv")
    parser.add_argument("--no-install", action="store_true", help="fail instead of installing")
    parser.add_argument("--quick", action="store_true", help="fewer runs, N = 1,000 only")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per side")
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help=f"comma-separated subset of: {', '.join(ENGINES)}",
    )
    parser.add_argument("--json", type=Path, default=None, help="where to write results")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per fan-out branch under valgrind instead of timing",
    )
    parser.add_argument(
        "--branches",
        type=int,
        default=instructions.HIGH - instructions.LOW,
        help="with --instructions: count per branch near this N (default 1,000; the target's "
        "other size is 10,000, about ten times as long)",
    )
    return parser


def count_instructions(python: Path, engines: Sequence[str], path: Path, branches: int) -> int:
    """The `--instructions` mode: the per-branch counts, printed and written as JSON."""
    started = time.perf_counter()
    print(f"[peers] counting swarmflow, {', '.join(engines)} under callgrind ...", file=sys.stderr)
    try:
        per = instructions.per_branch(python, SHAPES, ["swarmflow", *engines], _imports(), branches)
    except instructions.CounterMissing as exc:
        raise PeersUnavailable(f"bench-peers: {exc}") from None
    print(instructions.report(per, engines, PEER_RATIO_TARGET, branches))
    meta = {"low": instructions.LOW, "high": instructions.LOW + branches,
            "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "per_branch": per}, indent=2) + "\n")
    print(f"\nresults in {path} ({meta['seconds']:.0f} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if unknown := sorted(set(engines) - set(ENGINES)):
        raise SystemExit(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINES)}")
    settings = replace(QUICK if args.quick else FULL, warmup=1).with_runs(args.runs)
    sizes = (1_000,) if args.quick else (1_000, 10_000)
    started = time.perf_counter()
    python = ensure_peers(args.venv, install=not args.no_install)
    if args.instructions:
        if args.branches < 1:
            raise SystemExit(f"--branches must be at least 1, got {args.branches}")
        return count_instructions(python, engines, args.json or COUNTS_JSON, args.branches)
    raw = run_shapes(python, engines, sizes, settings)
    results = figures(raw, sizes, settings.chain_calls)
    print(report(results, engines))
    _write(args.json or DEFAULT_JSON, results, raw["versions"], settings,
           time.perf_counter() - started)  # fmt: skip
    return 0


def _write(
    path: Path, results: Results, versions: dict[str, str], settings: Settings, seconds: float
) -> None:
    rows = [
        {
            "shape": shape,
            "engine": engine,
            "value": fig.value,
            "baseline": fig.baseline,
            "times_raw": fig.times_raw,
        }
        for shape, by_engine in results.items()
        for engine, fig in by_engine.items()
    ]
    meta = {"versions": versions, "runs": settings.runs, "seconds": round(seconds, 1),
            "load_average": load_average()}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    print(f"\nresults in {path} ({seconds:.0f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
