"""The `swarmflow` command line: check, graph and run `.swarm` files; the demo; reports.

Exit status: 0 success, 1 diagnostics or a failed run, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from swarmflow.cli import (
    batch_commands,
    board_commands,
    dsl_commands,
    flow_commands,
    graph_commands,
    report_commands,
    run_commands,
    run_dirs_commands,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swarmflow", description="Multi-agent LLM work as declarative dataflow."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    dsl_commands.register(sub)
    run_commands.register(sub)
    flow_commands.register(sub)
    graph_commands.register(sub)
    report_commands.register(sub)
    run_dirs_commands.register(sub)
    batch_commands.register(sub)
    board_commands.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and run one command; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    code: int = args.handler(args)
    return code


def console_main() -> None:
    """Entry point of the `swarmflow` console script."""
    sys.exit(main())
