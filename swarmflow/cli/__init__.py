"""The `swarmflow` command line: check, graph and run flows; batches, resume, the board, reports.

Exit status: 0 success, 1 diagnostics or a failed run, 2 usage error, 130 interrupted (Ctrl-C),
141 standard output closed early (`swarmflow runs | head -1`: the rest is dropped quietly),
143 terminated (SIGTERM: stopped as Ctrl-C stops it, so a run is recorded as cancelled and its
`run.pid` removed).
A mistake in what the user gave (`ConfigError`) is one line on standard error, never a
traceback, whichever command meets it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from swarmflow.cli import (
    batch_commands,
    board_commands,
    dsl_commands,
    experience_commands,
    experiment_commands,
    flow_commands,
    graph_commands,
    models_commands,
    report_commands,
    run_commands,
    run_dirs_commands,
    view_commands,
)
from swarmflow.cli.signals import stop_on_sigterm, stopped


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
    experiment_commands.register(sub)
    experience_commands.register(sub)
    view_commands.register(sub)
    models_commands.register(sub)
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
        return USAGE
    return _handled(args)


USAGE, CLOSED_OUTPUT = 2, 141
"""141 = 128 + SIGPIPE: what a shell reports for a program a closed pipe stopped."""


def _handled(args: argparse.Namespace) -> int:
    """`_run_handler` with everything it prints passing the redactor."""
    with scrubbed_output():
        return _run_handler(args)


def _run_handler(args: argparse.Namespace) -> int:
    """Run the command; what the user's input got wrong, Ctrl-C and a closed pipe as one line
    (or none), never a traceback."""
    from swarmflow.core.errors import ConfigError

    name = f"swarmflow {args.command}"
    try:
        code: int = args.handler(args)
        sys.stdout.flush()  # a pipe closed early fails here, not at exit
    except BrokenPipeError:
        _quiet_stdout()
        return CLOSED_OUTPUT
    except KeyboardInterrupt as exc:
        word, code = stopped(exc)
        print(f"\n{name}: {word}", file=sys.stderr)
        return code
    except ConfigError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return USAGE
    return code


class _Scrubbed:
    """A text stream that passes every write through the one redactor (`core.secrets`)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from swarmflow.core.secrets import scrubbed

        self._stream.write(scrubbed(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def scrubbed_output() -> Iterator[None]:
    """Everything a command prints, to stdout or stderr, through the redactor: the CLI's
    output is a sink like the event log, whatever a command reads back (an experience note,
    a report, a result line) and prints."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Scrubbed(out), _Scrubbed(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises nothing."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def console_main() -> None:
    """Entry point of the `swarmflow` console script."""
    stop_on_sigterm()
    sys.exit(main())
