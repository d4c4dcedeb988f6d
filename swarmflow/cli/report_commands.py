"""`swarmflow report RUN_DIR [--html [PATH]]`: the report of a run (output, status, cost and
tokens per agent, timeline, refusals, retries, adherence), read from RUN_DIR/events.jsonl alone.

Exit status: 0 reported, 2 no readable log there (one line says why).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from swarmflow.cli.exit_status import OK, USAGE

if TYPE_CHECKING:
    from swarmflow.report.log import RunLog

HTML_NAME = "report.html"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `report` command."""
    report = subparsers.add_parser(
        "report", help="print a run's report from its event log", description=__doc__
    )
    report.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, e.g. runs/<run id>")
    report.add_argument(
        "--html",
        nargs="?",
        const="",
        metavar="PATH",
        help=f"write one self-contained HTML page instead (default RUN_DIR/{HTML_NAME})",
    )
    report.set_defaults(handler=report_command)


def report_command(args: argparse.Namespace) -> int:
    """Print the report of RUN_DIR, or write its HTML page."""
    from swarmflow.core.secrets import environment_redactor
    from swarmflow.report.log import LogError, read_log
    from swarmflow.report.text import report_of

    tolerant_output()
    try:
        log = read_log(args.run_dir)
    except LogError as exc:
        print(f"swarmflow report: {exc}", file=sys.stderr)
        return USAGE
    if args.html is None:
        # The log was scrubbed when written; this also hides what is secret where it is read.
        print(environment_redactor().scrub(report_of(log, args.run_dir)), end="")
        return OK
    return _write_html(log, args)


def _write_html(log: RunLog, args: argparse.Namespace) -> int:
    from swarmflow.core.secrets import environment_redactor
    from swarmflow.report.html import render_html

    run_dir = Path(args.run_dir)
    target = Path(args.html) if args.html else (run_dir if run_dir.is_dir() else run_dir.parent)
    if target.is_dir():
        target = target / HTML_NAME
    try:
        target.write_text(environment_redactor().scrub(render_html(log)), encoding="utf-8")
    except OSError as exc:
        print(f"swarmflow report: cannot write {target}: {exc}", file=sys.stderr)
        return USAGE
    print(target)
    if log.truncated:
        print(log.note(), file=sys.stderr)
    return OK


def tolerant_output() -> None:
    """Never crash on a terminal that cannot show the summary's few non-ASCII symbols."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
