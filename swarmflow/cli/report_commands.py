"""`swarmflow report RUN_DIR`: a run's summary, read back from its event log alone."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from swarmflow.flows.report import report_from_dir


def register(subparsers: Any) -> None:
    """Add the `report` command."""
    report = subparsers.add_parser(
        "report",
        help="print a run's summary from its event log",
        description="Print the closing summary of a run, read from RUN_DIR/events.jsonl alone.",
    )
    report.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, e.g. runs/<run id>")
    report.set_defaults(handler=report_command)


def report_command(args: argparse.Namespace) -> int:
    """Print the summary of RUN_DIR from its event log."""
    tolerant_output()
    run_dir = Path(args.run_dir)
    if not (run_dir / "events.jsonl").is_file():
        print(f"swarmflow report: no events.jsonl in {run_dir}", file=sys.stderr)
        return 1
    print(report_from_dir(run_dir), end="")
    return 0


def tolerant_output() -> None:
    """Never crash on a terminal that cannot show the summary's few non-ASCII symbols."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
