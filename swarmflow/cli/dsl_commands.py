"""`swarmflow check` and `graph`: the command line for reading `.swarm` files.

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
    """Add `check` and `graph` to the `swarmflow` command."""
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

    graph = subparsers.add_parser(
        "graph", help="print a flow's team and step graph, or a finished run's executed graph"
    )
    graph.add_argument("file", metavar="FILE|RUN_DIR")
    graph.add_argument(
        "--format",
        choices=("mermaid", "dot"),
        default="mermaid",
        help="Mermaid (default) or Graphviz DOT",
    )
    graph.set_defaults(handler=graph_command)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"swarmflow: cannot read {path}: {exc}", file=sys.stderr)
        return None


def check_command(args: argparse.Namespace) -> int:
    """Print diagnostics for each file; 0 clean, 1 diagnostics, 2 unreadable file."""
    from swarmflow.dsl.checker import check_source
    from swarmflow.dsl.diagnostics import render_all
    from swarmflow.dsl.python_flows import looks_like_python_flow

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
    from swarmflow.dsl import DslError
    from swarmflow.dsl.python_flows import check_python_flow, load_python_flow

    try:
        flow = load_python_flow(spec)
    except DslError as exc:
        print(f"swarmflow: {exc}", file=sys.stderr)
        return None, ""
    return check_python_flow(flow)


def _program(path: str) -> tuple[Any, int]:
    """The compiled IR of a file, or the exit status after printing why there is none."""
    from swarmflow.dsl import DslError, compile_source

    source = _read(path)
    if source is None:
        return None, USAGE
    try:
        return compile_source(source, path, base_dir=str(Path(path).parent)), OK
    except DslError as exc:
        print(str(exc), file=sys.stderr)
        return None, PROBLEMS


def graph_command(args: argparse.Namespace) -> int:
    """Print the declared team, then the step graph, as Mermaid or DOT.

    Given a run directory instead of a file, print the declared topology and the executed
    graph, both read back from the run's event log.
    """
    if Path(args.file).is_dir():
        return _run_graph(Path(args.file))
    program, status = _program(args.file)
    if program is None:
        return status
    if args.format == "dot":
        print(program.topology_dot())
        print()
        print(program.steps_dot())
    else:
        print(f"%% team of {program.name}")
        print(program.topology_mermaid())
        print()
        print(f"%% steps of {program.name}")
        print(program.steps_mermaid())
    return OK


def _run_graph(run_dir: Path) -> int:
    """The graphs a finished run recorded in `events.jsonl`."""
    from swarmflow.core.events import RunFinished, RunStarted
    from swarmflow.core.team import Agent, Team
    from swarmflow.sinks import read_events

    log = run_dir / "events.jsonl"
    if not log.is_file():
        print(
            f"swarmflow graph: {run_dir} holds no events.jsonl (not a run directory?)",
            file=sys.stderr,
        )
        return USAGE
    events = list(read_events(log))
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    finished = next((e for e in events if isinstance(e, RunFinished)), None)
    if started is not None:
        team = Team([Agent(name) for name in started.agents], edges=started.edges)
        print(team.mermaid())
        print()
    print(finished.graph if finished is not None else "%% the run has not finished")
    return OK
