"""`swarmflow check`: the command line for reading `.swarm` files.

Exit status: 0 clean, 1 diagnostics, 2 usage.
The DSL package is imported only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

OK, PROBLEMS, USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add `check` to the `swarmflow` command."""
    check = subparsers.add_parser(
        "check",
        help="check .swarm files and print diagnostics",
        description="Print each problem as file:line:col: severity: "
        "message, with the source line and a caret.",
    )
    check.add_argument(
        "files",
        nargs="+",
        metavar="FILE|MODULE:FLOW",
        help=".swarm files, or Python flows as package.module:flow (their declarations)",
    )
    check.add_argument(
        "--allow-warnings", action="store_true", help="exit 0 when there are warnings but no errors"
    )
    check.set_defaults(handler=check_command)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"swarmflow: cannot read {path}: {exc}", file=sys.stderr)
        return None


def check_command(args: argparse.Namespace) -> int:
    """Print diagnostics for each file; 0 clean, 1 diagnostics, 2 unreadable file."""
    from swarmflow.cli.python_flows import looks_like_python_flow
    from swarmflow.dsl import check_source, render_all

    status = OK
    for path in args.files:
        if looks_like_python_flow(path) and not Path(path).exists():
            problems, module_source = _check_python(path)
            if problems is None:
                return USAGE
            if problems:
                print(render_all(problems, module_source))
            if any(d.is_error for d in problems) or (problems and not args.allow_warnings):
                status = PROBLEMS
            continue
        source = _read(path)
        if source is None:
            return USAGE
        found = check_source(source, path, resolve=True, base_dir=str(Path(path).parent))
        if found:
            print(render_all(found, source))
        if any(d.is_error for d in found) or (found and not args.allow_warnings):
            status = PROBLEMS
    return status


def _check_python(spec: str) -> tuple[Any, str]:
    """Diagnostics of a Python flow named `module:flow`, or None when it cannot be loaded."""
    from swarmflow.cli.python_flows import check_python_flow, load_python_flow
    from swarmflow.dsl import DslError

    try:
        flow = load_python_flow(spec)
    except DslError as exc:
        print(f"swarmflow: {exc}", file=sys.stderr)
        return None, ""
    return check_python_flow(flow)
