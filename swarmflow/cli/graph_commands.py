"""`swarmflow graph FILE|RUN_DIR`: a flow's team and steps, or a finished run's graph.

Exit status: 0 printed, 1 the file has diagnostics, 2 usage (unreadable file, not a run).
The DSL package is imported only when a `.swarm` file is drawn.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

OK, PROBLEMS, USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add `graph` to the `swarmflow` command."""
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


def _program(path: str) -> tuple[Any, int]:
    """The compiled IR of a file, or the exit status after printing why there is none."""
    from swarmflow.dsl import DslError, compile_source

    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"swarmflow: cannot read {path}: {exc}", file=sys.stderr)
        return None, USAGE
    try:
        return compile_source(source, path, base_dir=str(Path(path).parent)), OK
    except DslError as exc:
        print(str(exc), file=sys.stderr)
        return None, PROBLEMS


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
