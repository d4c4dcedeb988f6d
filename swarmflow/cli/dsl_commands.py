"""`swarmflow check FLOW...`: print each problem of `.swarm` files (or of Python flows'
declarations) as file:line:col: severity: message, with the source line and a caret.

Exit status: 0 clean, 1 diagnostics, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from swarmflow.cli.exit_status import OK, PROBLEMS, USAGE

if TYPE_CHECKING:
    from swarmflow.dsl.syntax.diagnostics import Diagnostic

# The DSL package is imported only when the command runs: `swarmflow --help` stays quick.


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `check` to the `swarmflow` command."""
    check = subparsers.add_parser(
        "check", help="check .swarm files and print diagnostics", description=__doc__
    )
    check.add_argument(
        "files",
        nargs="+",
        metavar="FLOW",
        help=".swarm files, or Python flows as file.py:flow or module:flow (their "
        "declarations; a module is found on sys.path or in the current directory)",
    )
    check.add_argument(
        "--allow-warnings", action="store_true", help="exit 0 when there are warnings but no errors"
    )
    check.set_defaults(handler=check_command)


def _read(path: str) -> str | int:
    """The file's text; else the exit status, after printing why there is none (a file too
    large to read is its one located problem, printed as the parser's are)."""
    from swarmflow.cli.source_files import SourceError, SourceTooLarge, read_flow_source
    from swarmflow.dsl import render_all

    try:
        return read_flow_source(path)
    except SourceTooLarge as exc:
        print(render_all([exc.diagnostic], ""))
        return PROBLEMS
    except SourceError as exc:
        print(f"swarmflow: {exc}", file=sys.stderr)
        return USAGE


def check_command(args: argparse.Namespace) -> int:
    """Print diagnostics for each file, or a line saying it is ok; 0 clean, 1 diagnostics,
    2 unreadable file."""
    from swarmflow.cli.flow_refs import python_reference
    from swarmflow.dsl import render_all
    from swarmflow.dsl.check.check import check_report

    status = OK
    for path in args.files:
        if python_reference(path) is not None or path.endswith(".py"):
            problems, module_source, summary = _check_python(path)
            if problems is None:
                return USAGE
            if problems:
                print(render_all(problems, module_source))
            if any(d.is_error for d in problems) or (problems and not args.allow_warnings):
                status = PROBLEMS
            else:
                print(_ok(path, len(problems), summary))
            continue
        source = _read(path)
        if isinstance(source, int):
            return source
        report = check_report(source, path, resolve=True, base_dir=str(Path(path).parent))
        found = report.diagnostics
        if found:
            print(render_all(found, source))
        if any(d.is_error for d in found) or (found and not args.allow_warnings):
            status = PROBLEMS
        else:
            print(_ok(path, len(found), report.summary()))
    return status


def _ok(path: str, warnings: int, summary: str) -> str:
    """`flow.swarm: ok (flow fix: 3 agents, 4 edges)`, the warnings let pass counted."""
    passed = f" with {warnings} warning{'s' if warnings > 1 else ''}" if warnings else ""
    return f"{path}: ok{passed} ({summary})"


def _check_python(spec: str) -> tuple[list[Diagnostic] | None, str, str]:
    """Diagnostics of a Python flow named `module:flow` (None when it cannot be loaded), its
    module's source, and a summary of what it declares."""
    from swarmflow.cli.python_flows import check_python_flow, load_python_flow
    from swarmflow.core.errors import ConfigError
    from swarmflow.dsl.check.check import CheckReport

    try:
        flow = load_python_flow(spec)
    except ConfigError as exc:
        print(f"swarmflow check: {exc}", file=sys.stderr)
        return None, "", ""
    team = flow.team
    summary = CheckReport([], flow.name, len(team.agents), len(set(team.edges))).summary()
    return (*check_python_flow(flow), summary)
