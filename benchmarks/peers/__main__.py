"""`python -m benchmarks.peers`: swarmflow beside LangGraph and pydantic-graph.

    python -m benchmarks.peers                 # creates .venv-peers on first use
    python -m benchmarks.peers --quick         # fewer runs, N = 1,000 only
    python -m benchmarks.peers --venv /tmp/peers --runs 7

Each engine is measured against its own raw-asyncio baseline in its own process, so the
"x raw" figures compare fairly across processes on a noisy machine; the swarmflow/peer
ratios use the medians as measured.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks._harness import FULL, QUICK, Settings
from benchmarks.cases import chain, fanout, skew
from benchmarks.cases._common import runs_folder
from benchmarks.peers import ENGINES, PEER_MODULES, PEER_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = ROOT / ".venv-peers"
SHAPES = Path(__file__).resolve().parent / "shapes.py"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "peers.json"
SHAPE_TIMEOUT = 900


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


def run_peer(python: Path, engine: str, sizes: Sequence[int], settings: Settings) -> dict[str, Any]:
    """Run `shapes.py` for one engine in the peers' interpreter; its parsed JSON."""
    cmd = [
        str(python),
        str(SHAPES),
        "--engine",
        engine,
        "--sizes",
        ",".join(map(str, sizes)),
        "--steps",
        str(settings.chain_calls),
        "--runs",
        str(settings.runs),
        "--warmup",
        str(settings.warmup),
    ]
    print(f"[peers] {engine} ...", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, check=False, timeout=SHAPE_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise PeersUnavailable(f"bench-peers: {engine} took over {SHAPE_TIMEOUT} s") from None
    if done.returncode != 0:
        raise PeersUnavailable(
            f"bench-peers: {engine} failed (exit {done.returncode}):\n{_tail(done.stderr)}"
        )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def peer_figures(raw: dict[str, Any], sizes: Sequence[int], steps: int) -> dict[str, Figure]:
    """A peer's JSON as per-branch, per-step and wall-time figures."""
    out = {}
    for n in sizes:
        med = raw["fanout"][str(n)]
        out[f"fanout {n}"] = Figure(med["engine"] / n * 1e6, med["baseline"] / n * 1e6)
    out["chain"] = Figure(
        raw["chain"]["engine"] / steps * 1e6, raw["chain"]["baseline"] / steps * 1e6
    )
    out["skew"] = Figure(raw["skew"]["engine"], raw["skew"]["baseline"])
    return out


def swarmflow_figures(sizes: Sequence[int], settings: Settings) -> dict[str, Figure]:
    """The same shapes in swarmflow, measured in this process."""
    print("[peers] swarmflow ...", file=sys.stderr, flush=True)
    out = {}
    steps = settings.chain_calls
    with runs_folder() as root:
        for n in sizes:
            paired = fanout.time_fanout(n, settings, root)
            out[f"fanout {n}"] = Figure(
                paired.swarmflow["wall"] / n * 1e6, paired.baseline["wall"] / n * 1e6
            )
        paired = chain.agent_steps(steps, settings, root)
        out["chain"] = Figure(
            paired.swarmflow["wall"] / steps * 1e6, paired.baseline["wall"] / steps * 1e6
        )
        wall = skew.skew_walls(settings, root)
        out["skew"] = Figure(*wall)
    return out


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


def report(results: Results, engines: Sequence[str]) -> str:
    """A table: each engine's figure (and x its raw baseline), then swarmflow / each peer."""
    head = ["shape", "swarmflow", *engines, *(f"swarmflow/{e}" for e in engines)]
    lines = [head]
    for shape, by_engine in results.items():
        label, unit = _label(shape)
        ours = by_engine["swarmflow"]
        cells = [label, _cell(ours, unit)]
        cells += [_cell(by_engine.get(e), unit) for e in engines]
        cells += [
            f"{ours.value / by_engine[e].value:.2f}x" if e in by_engine else "-" for e in engines
        ]
        lines.append(cells)
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in lines
    ]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text) + "\n(ratio < 1: swarmflow is faster)"


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
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if unknown := sorted(set(engines) - set(ENGINES)):
        raise SystemExit(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINES)}")
    settings = replace(QUICK if args.quick else FULL, warmup=1).with_runs(args.runs)
    sizes = (1_000,) if args.quick else (1_000, 10_000)
    started = time.perf_counter()
    python = ensure_peers(args.venv, install=not args.no_install)
    results: Results = {}
    for shape, fig in swarmflow_figures(sizes, settings).items():
        results[shape] = {"swarmflow": fig}
    versions = {}
    for engine in engines:
        raw = run_peer(python, engine, sizes, settings)
        versions[engine] = raw["version"]
        for shape, fig in peer_figures(raw, sizes, settings.chain_calls).items():
            results[shape][engine] = fig
    print(report(results, engines))
    _write(args.json, results, versions, settings, time.perf_counter() - started)
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
    meta = {"versions": versions, "runs": settings.runs, "seconds": round(seconds, 1)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    print(f"\nresults in {path} ({seconds:.0f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
