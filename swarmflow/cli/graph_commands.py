"""`swarmflow graph FLOW|RUN_DIR`: one diagram of a flow or of a finished run, as Mermaid, DOT,
PNG or SVG.

`--which` picks the diagram: the declared team (`topology`), the step graph of a `.swarm`
file (`steps`) or what a run executed, with every edge it followed (`run`); a Python flow
(`file.py:flow` or `module:flow`, found as every command finds one) has only its team, since
its steps are code. `--format` prints Mermaid or DOT, or renders
PNG/SVG through Graphviz. Exit status: 0 drawn, 1 the file has diagnostics, 2 usage (an
unreadable file, no such graph, no Graphviz).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from swarmflow.cli.exit_status import OK, PROBLEMS, USAGE

if TYPE_CHECKING:
    from swarmflow.dsl.compile.plan import Program


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `graph` to the `swarmflow` command."""
    graph = subparsers.add_parser(
        "graph",
        help="print one diagram of a flow (team or steps) or of a finished run",
        description=__doc__,
    )
    graph.add_argument(
        "file",
        metavar="FLOW|RUN_DIR",
        help="a .swarm file, file.py:flow, module:flow, or a run directory (runs/<run id>)",
    )
    graph.add_argument(
        "--which",
        choices=("topology", "steps", "run"),
        help="the diagram (default: steps for a .swarm file, topology for a Python flow, "
        "run for a run directory)",
    )
    graph.add_argument(
        "--format",
        choices=("mermaid", "dot", "png", "svg"),
        default="mermaid",
        help="Mermaid (default), Graphviz DOT, or PNG/SVG rendered by Graphviz's `dot`",
    )
    graph.add_argument(
        "-o", "--output", metavar="PATH", help="write the diagram here instead of to stdout"
    )
    graph.set_defaults(handler=graph_command)


def graph_command(args: argparse.Namespace) -> int:
    """Draw one diagram; see the module docstring for the exit statuses."""
    from swarmflow.cli.flow_refs import python_reference
    from swarmflow.report.graphs import GraphError
    from swarmflow.report.log import LogError

    text_format = "dot" if args.format in ("png", "svg") else args.format
    try:
        if python_reference(args.file) is not None or args.file.endswith(".py"):
            drawn, status = _of_python_flow(args.file, args.which or "topology", text_format)
            if drawn is None:
                return status
            diagram = drawn
        elif Path(args.file).is_dir():
            diagram = _of_run(Path(args.file), args.which or "run", text_format)
        else:
            drawn, status = _of_file(args.file, args.which or "steps", text_format)
            if drawn is None:
                return status
            diagram = drawn
        return _write(diagram, args)
    except (LogError, GraphError) as exc:
        print(f"swarmflow graph: {exc}", file=sys.stderr)
        return USAGE


def _of_run(run_dir: Path, which: str, fmt: str) -> str:
    from swarmflow.report.graphs import run_diagram
    from swarmflow.report.log import read_log

    return run_diagram(read_log(run_dir).events, which, fmt)  # type: ignore[arg-type]


def _of_python_flow(spec: str, which: str, fmt: str) -> tuple[str | None, int]:
    """The declared team of a Python flow, or None and the exit status."""
    from swarmflow.cli.flow_refs import load_python_flow
    from swarmflow.core.errors import ConfigError
    from swarmflow.report.graphs import team_diagram

    if which != "topology":
        print(
            f"swarmflow graph: --which {which} needs a .swarm file or a run directory; "
            f"a Python flow's steps are code, so {spec} has only --which topology",
            file=sys.stderr,
        )
        return None, USAGE
    try:
        flow = load_python_flow(spec)
    except ConfigError as exc:
        print(f"swarmflow graph: {exc}", file=sys.stderr)
        return None, USAGE
    team = flow.team
    return team_diagram(flow.name, team.names, team.edges, fmt), OK  # type: ignore[arg-type]


def _of_file(path: str, which: str, fmt: str) -> tuple[str | None, int]:
    """A `.swarm` file's diagram, or None and the exit status after saying why."""
    program, status = _program(path)
    if program is None:
        return None, status
    if which == "run":
        print("swarmflow graph: --which run needs a run directory (runs/<run id>)", file=sys.stderr)
        return None, USAGE
    if which == "topology":
        from swarmflow.report.graphs import team_diagram

        agents = [a.name for a in program.agents]
        return team_diagram(program.name, agents, program.edges, fmt), OK  # type: ignore[arg-type]
    return (program.steps_dot() if fmt == "dot" else program.steps_mermaid()), OK


def _program(path: str) -> tuple[Program | None, int]:
    """The compiled IR of a file, or the exit status after printing why there is none."""
    from swarmflow.cli.source_files import SourceError, SourceTooLarge, read_flow_source
    from swarmflow.dsl import DslError, compile_source

    try:
        source = read_flow_source(path)
    except SourceTooLarge as exc:
        print(str(DslError([exc.diagnostic])), file=sys.stderr)
        return None, PROBLEMS
    except SourceError as exc:
        print(f"swarmflow: {exc}", file=sys.stderr)
        return None, USAGE
    try:
        return compile_source(source, path, base_dir=str(Path(path).parent)), OK
    except DslError as exc:
        print(str(exc), file=sys.stderr)
        return None, PROBLEMS


def _write(diagram: str, args: argparse.Namespace) -> int:
    """Print the diagram, or render it, to stdout or to `--output`."""
    from swarmflow.core.secrets import environment_redactor
    from swarmflow.report.graphs import render_dot

    diagram = environment_redactor().scrub(diagram)

    if args.format in ("png", "svg"):
        data = render_dot(diagram, args.format)
    else:
        data = (diagram + "\n").encode()
    if args.output:
        try:
            Path(args.output).write_bytes(data)
        except OSError as exc:
            print(f"swarmflow graph: cannot write {args.output}: {exc}", file=sys.stderr)
            return USAGE
        return OK
    if args.format in ("png", "svg"):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        print(diagram)
    return OK
