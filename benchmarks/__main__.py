"""`python -m benchmarks` (`make bench`): run the cases, print the table, write the JSON.

python -m benchmarks                      # every case, full sizes (a few minutes)
python -m benchmarks --quick              # fewer runs and samples (under a minute or so)
python -m benchmarks --cases fanout,chain --runs 9 --json /tmp/bench.json
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._harness import (
    FULL,
    QUICK,
    Row,
    Settings,
    environment,
    load_average,
    markdown,
    table,
    write_json,
)
from benchmarks.cases import CASES

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller memory probe")
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated subset of: {', '.join(CASES)}"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="timed runs per side after the warm-up (at least 5 is advised)",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return parser


def _chosen(spec: str) -> list[str]:
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")
    return names


def run_cases(names: Sequence[str], settings: Settings) -> list[Row]:
    """Run the named cases in order, reporting progress on stderr."""
    rows: list[Row] = []
    for name in names:
        started = time.perf_counter()
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        rows.extend(CASES[name](settings))
        print(
            f"[bench] {name} done in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = (QUICK if args.quick else FULL).with_runs(args.runs)
    names = _chosen(args.cases)
    started = time.perf_counter()
    rows = run_cases(names, settings)
    meta = environment(settings) | {
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": load_average(),  # the machine may be shared: say how busy it was
    }
    print(table(rows))
    if args.markdown:
        print("\n" + markdown(rows))
    write_json(args.json, rows, meta)
    missed = [r for r in rows if r.passed is False]
    print(
        f"\n{len(rows)} rows, {len(missed)} target(s) missed, {meta['seconds']} s; "
        f"load average {meta['load_average']}; results in {args.json}"
    )
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
