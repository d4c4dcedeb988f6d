"""`swarmflow view [RUNS_DIR | OUT]`: the runs and experiments of a folder as a live local page.

The folder holds run directories and experiment folders (a runs root, an experiment's OUT, or
one run); the page shows runs and experiments as they go, each run's timeline and
transcripts, each experiment's progress, table and figures, and loads nothing from elsewhere.
It is served on 127.0.0.1 (a free port unless `--port`); its URL is printed and opened in the
browser (not with `--no-open`), until Ctrl-C. Exit status: 0 stopped, 2 the folder is not
one, or the `view` extra is not installed (one line says how to install it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from swarmflow.cli.exit_status import OK, USAGE

INSTALL_HINT = "swarmflow view needs the view extra: pip install 'swarmflow[view]'"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `view` command."""
    view = subparsers.add_parser(
        "view",
        help="a live local web page of the runs and experiments in a folder",
        description=__doc__,
    )
    view.add_argument(
        "folder",
        metavar="RUNS_DIR|OUT",
        nargs="?",
        default=None,
        help="the folder to show (default: $SWARMFLOW_RUNS, else ./runs)",
    )
    view.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    view.add_argument(
        "--no-open", action="store_true", help="print the URL without opening a browser"
    )
    view.set_defaults(handler=view_command)


def view_command(args: argparse.Namespace) -> int:
    """Serve the view of the folder until interrupted."""
    from swarmflow.record.runs_root import resolve_runs_root

    folder = Path(resolve_runs_root(args.folder)).resolve()
    if not folder.is_dir():
        print(f"swarmflow view: {folder} is not a folder", file=sys.stderr)
        return USAGE
    if not 0 <= args.port <= 65535:
        print(f"swarmflow view: --port {args.port} is not a port (0 to 65535)", file=sys.stderr)
        return USAGE
    try:
        from swarmflow.view.server import bound_socket, serve, url_of
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return USAGE
    try:
        sock = bound_socket(args.port)
    except OSError as exc:
        print(f"swarmflow view: cannot listen on port {args.port}: {exc.strerror}", file=sys.stderr)
        return USAGE
    url = url_of(sock)
    print(f"swarmflow view of {folder}: {url} (Ctrl-C stops it)", flush=True)
    if not args.no_open:
        import webbrowser

        webbrowser.open(url)
    try:
        serve(folder, sock)
    finally:
        sock.close()
    return OK
