"""`swarmflow demo`: the flagship flow, end to end: parallel coders in git worktrees,
reviewers that run the tests, an arbiter and a human fallback. Without --model a scripted demo
policy plays the model, offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from swarmflow.cli.model_options import add_model_options
from swarmflow.record.runs_root import DEFAULT_RUNS_ROOT, RUNS_ENV


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `demo` command."""
    _register_demo(subparsers)


def _register_demo(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `demo` and its options."""
    demo = subparsers.add_parser(
        "demo", help="run the parallel-coders-plus-arbiter flow end to end", description=__doc__
    )
    add = demo.add_argument
    add(
        "--model",
        metavar="NAME",
        help="a real model on the OpenAI-compatible endpoint in OPENAI_BASE_URL/OPENAI_API_KEY",
    )
    add_model_options(demo)
    add("--repo", type=Path, metavar="PATH", help="a git repository to work on (needs --model)")
    add("--task", metavar="TEXT", help="what the coders should do (needs --model)")
    add(
        "--test-command",
        default="",
        metavar="CMD",
        help="how reviewers run the tests (default: this Python's `-m pytest -q`)",
    )
    add("--coders", type=int, default=3, metavar="N", help="at most N coders (default 3)")
    add(
        "--feedback",
        choices=("off", "lsp"),
        default="off",
        help="lsp: a language server (ruff) checks each coder edit; new diagnostics reach the "
        "coder at its next step (default off)",
    )
    add(
        "--threshold",
        type=float,
        default=0.7,
        help="below this arbiter confidence a human decides (default 0.7)",
    )
    add(
        "--human",
        choices=("console", "auto"),
        default=None,
        help="console: ask on the terminal; auto: approve the arbiter's pick (default: console "
        "when stdin is a terminal, else auto)",
    )
    add("--keep", action="store_true", help="keep the coders' worktrees after the run")
    add(
        "--runs-dir",
        type=Path,
        metavar="DIR",
        help=f"where run directories go (default ${RUNS_ENV} or ./{DEFAULT_RUNS_ROOT})",
    )
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    """Run the flagship flow and print its summary; 0 when the run finished ok."""
    # The flow and the run's machinery load when the command runs, not with the parser.
    from swarmflow.cli.demo_run import run_demo

    return run_demo(args)
